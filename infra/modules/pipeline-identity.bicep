// The user-assigned managed identity the GitHub workflow deploys as, when `azd pipeline config`
// made one (its first offer, "Federated User Managed Identity"): found by the resource id azd
// keeps in the environment as AZURE_PIPELINE_MSI_CLIENT_ID (despite the name, azure-dev
// pkg/pipeline/pipeline_manager.go, Configure, stores `*msIdentity.ID` there). An identity's
// principalId is the object id of its service principal in Entra ID, which owners take, and its
// clientId is the application id its tokens carry. In a module of its own, deployed only when
// there is one: the identity is in a resource group of its own (azd makes rg-<project>-msi), so
// its scope is read from the id, which must not be split when it is empty.

@description('Resource id of the identity: /subscriptions/<id>/resourceGroups/<group>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>.')
param resourceId string

var parts = split(resourceId, '/')

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' existing = {
  scope: resourceGroup(parts[2], parts[4])
  name: parts[8]
}

output principalId string = identity.properties.principalId
output clientId string = identity.properties.clientId
