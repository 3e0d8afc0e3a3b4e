#!/bin/sh
# azd's postdeploy hook (azure.yaml), and the same check by hand after any deployment:
# `handler smoke` against the deployed blog, writing with the operator's Entra ID token.
# azd passes its environment (main.bicep's outputs) as variables; by hand:
#   eval "$(azd env get-values)" && infra/hooks/smoke.sh
# It runs the smoke test from source (the packaged handler is built for the Functions host's
# Linux, and needs none of its settings for this).
set -eu
cd "$(dirname "$0")/../.."
: "${BLOG_URL:?not set: run after azd provision, or eval \"\$(azd env get-values)\"}"
: "${BLOG_SIGN_IN:?not set: run after azd provision, or eval \"\$(azd env get-values)\"}"
if [ "$BLOG_SIGN_IN" = off ]; then
  echo "sign-in is off (createAppRegistration=false): checking the anonymous reads only" >&2
  exec cargo run --quiet --release --no-default-features -- smoke "$BLOG_URL"
fi
: "${BLOG_API_IDENTIFIER_URI:?not set: the deployment has sign-in but no identifier URI (set authIdentifierUri)}"
# The Azure CLI is pre-authorized for the blog's scope (infra/modules/signin.bicep), so this
# needs no consent; it needs `az login` as a user of the tenant.
BLOG_SMOKE_TOKEN=$(az account get-access-token --resource "$BLOG_API_IDENTIFIER_URI" --query accessToken -o tsv)
export BLOG_SMOKE_TOKEN
exec cargo run --quiet --release --no-default-features -- smoke "$BLOG_URL"
