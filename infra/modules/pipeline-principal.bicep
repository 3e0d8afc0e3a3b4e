// The object id of the service principal the GitHub workflow deploys as, found by its client id
// (the one `azd pipeline config` keeps in the environment as AZURE_PIPELINE_CLIENT_ID). Kept in
// a module of its own so that main.bicep can look it up only when there is one: an `existing`
// Graph resource is read at deployment, and an empty appId would fail it.
extension microsoftGraphV1

@description('Application (client) id of the pipeline\'s service principal.')
param clientId string

// appId is the service principal's alternate key (msgraph-bicep-types,
// microsoft.graph/v1.0/1.0.0 types: Required, Identifier), so it names an existing one.
resource principal 'Microsoft.Graph/servicePrincipals@v1.0' existing = {
  appId: clientId
}

output objectId string = principal.id
