#!/bin/sh
# azd's postprovision hook (azure.yaml): writes local.azure.env, the settings that run the
# handler on this machine against the account just provisioned, with your own `az login` (the
# deployment gave you the Cosmos DB data role: operatorPrincipalId in infra/main.bicep):
#   set -a && . ./local.azure.env && set +a && cargo run
# The deployed function app keeps making the copies (its change-feed triggers follow the same
# account), so this run only serves. BLOG_AUTH=development takes the writer from X-Dev-User, as
# with the embedded store: it listens on loopback only. By hand:
#   eval "$(azd env get-values)" && infra/hooks/local-settings.sh
set -eu
cd "$(dirname "$0")/../.."
: "${BLOG_COSMOS_ENDPOINT:?not set: run after azd provision, or eval \"\$(azd env get-values)\"}"
: "${BLOG_COSMOS_DATABASE:?not set: run after azd provision, or eval \"\$(azd env get-values)\"}"
file=${BLOG_LOCAL_SETTINGS_FILE:-local.azure.env}
cat > "$file.partial" <<SETTINGS
# Written by infra/hooks/local-settings.sh after azd provision: the handler on this machine,
# against the deployed account, with your az login. Use:
#   set -a && . ./$file && set +a && cargo run
CosmosDB__accountEndpoint=$BLOG_COSMOS_ENDPOINT
COSMOS_DATABASE=$BLOG_COSMOS_DATABASE
BLOG_AUTH=development
SETTINGS
# The pictures, in the deployed account's container, with the same az login (the deployment gave
# the operator the app's role on it: infra/modules/storage.bicep). A deployment made before the
# outputs existed has none: the local run then shows no pictures, and says so at start.
if [ -n "${BLOG_PICTURES_BLOB_ENDPOINT:-}" ] && [ -n "${BLOG_PICTURES_CONTAINER:-}" ]; then
  cat >> "$file.partial" <<SETTINGS
BLOG_PICTURES__blobServiceUri=$BLOG_PICTURES_BLOB_ENDPOINT
BLOG_PICTURES_CONTAINER=$BLOG_PICTURES_CONTAINER
SETTINGS
fi
mv "$file.partial" "$file"
echo "wrote $file: run the blog here against $BLOG_COSMOS_ENDPOINT with: set -a && . ./$file && set +a && cargo run" >&2
