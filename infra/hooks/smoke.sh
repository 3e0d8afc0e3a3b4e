#!/bin/sh
# azd's postdeploy hook (azure.yaml), and the same check by hand after any deployment:
# `handler smoke` against the deployed blog, writing with the operator's Entra ID token.
# azd passes its environment (main.bicep's outputs) as variables; by hand:
#   eval "$(azd env get-values)" && infra/hooks/smoke.sh
# It runs the handler `cargo xtask package` just built into dist/app where this machine can run
# it (Linux on x86_64), so nothing is compiled again; elsewhere (macOS, arm64) it runs from source.
set -eu
cd "$(dirname "$0")/../.."
: "${BLOG_URL:?not set: run after azd provision, or eval \"\$(azd env get-values)\"}"
: "${BLOG_SIGN_IN:?not set: run after azd provision, or eval \"\$(azd env get-values)\"}"

smoke() {
  if [ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] && [ -x dist/app/handler ]; then
    exec dist/app/handler smoke "$@"
  fi
  exec cargo run --quiet --release --no-default-features -- smoke "$@"
}

if [ "$BLOG_SIGN_IN" = off ]; then
  echo "sign-in is off (createAppRegistration=false): checking the anonymous reads only" >&2
  smoke "$BLOG_URL"
fi
: "${BLOG_API_IDENTIFIER_URI:?not set: the deployment has sign-in but no identifier URI (set authIdentifierUri)}"
: "${BLOG_TENANT_ID:?not set: run after azd provision, or eval \"\$(azd env get-values)\"}"
# The Azure CLI is pre-authorized for the blog's scope (infra/modules/signin.bicep), so this
# needs no consent; it needs `az login` as a user of the blog's tenant. The tenant is named:
# without it, `az` asks the tenant of its default subscription, which answers AADSTS500011 (no
# such resource there) when that is another tenant.
if ! BLOG_SMOKE_TOKEN=$(az account get-access-token --tenant "$BLOG_TENANT_ID" --resource "$BLOG_API_IDENTIFIER_URI" --query accessToken -o tsv); then
  echo "smoke: no token for $BLOG_API_IDENTIFIER_URI from tenant $BLOG_TENANT_ID: run \`az login --tenant $BLOG_TENANT_ID\` and try again (infra/hooks/smoke.sh)" >&2
  exit 1
fi
export BLOG_SMOKE_TOKEN
smoke "$BLOG_URL"
