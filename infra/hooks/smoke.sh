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
  # BLOG_SMOKE_HANDLER: another handler executable to run (a build of your own; the tests' stand-in).
  if [ -n "${BLOG_SMOKE_HANDLER:-}" ]; then
    exec "$BLOG_SMOKE_HANDLER" smoke "$@"
  fi
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
# The token is fetched now, when it is used: azd's (the hook runs under azd, in CI as here) or
# else the Azure CLI's. Both sign in as the Azure CLI's application, which the registration
# pre-authorizes for the blog's scope (infra/modules/signin.bicep), so no consent is asked. In
# CI, `azd auth token` asks GitHub for a fresh OIDC assertion each time, where an `az login` made
# before a long deployment holds one that has expired (AADSTS700024). The tenant is named:
# without it, the tenant of the default subscription is asked, which answers AADSTS500011 (no
# such resource there) when that is another tenant.
token() {
  if command -v azd >/dev/null 2>&1 &&
    azd auth token --tenant-id "$BLOG_TENANT_ID" --scope "$BLOG_API_IDENTIFIER_URI/.default" 2>/dev/null; then
    return 0
  fi
  if command -v az >/dev/null 2>&1; then
    az account get-access-token --tenant "$BLOG_TENANT_ID" --resource "$BLOG_API_IDENTIFIER_URI" --query accessToken -o tsv
    return
  fi
  return 1
}
if ! BLOG_SMOKE_TOKEN=$(token) || [ -z "$BLOG_SMOKE_TOKEN" ]; then
  echo "smoke: no token for $BLOG_API_IDENTIFIER_URI from tenant $BLOG_TENANT_ID: run \`azd auth login --tenant-id $BLOG_TENANT_ID\` (or \`az login --tenant $BLOG_TENANT_ID\`) and try again (infra/hooks/smoke.sh)" >&2
  exit 1
fi
export BLOG_SMOKE_TOKEN
smoke "$BLOG_URL"
