// The storage account the Functions host needs (AzureWebJobsStorage: leases, keys, timers), the
// blob container Flex Consumption deploys the app package from, and the pictures' container. No shared keys: the app
// reaches it with its user-assigned identity only.

param location string
param tags object
param storageAccountName string

@description('Blob container holding the deployment package.')
param deploymentContainerName string = 'app-package'

@description('Blob container holding the pictures of posts (BLOG_PICTURES_CONTAINER).')
param picturesContainerName string = 'pictures'

@description('Principal id of the Function App\'s identity.')
param principalId string

@description('Object id of the operator: the same role on the pictures as the app, so that the handler run on the operator\'s machine against the deployed account (infra/hooks/local-settings.sh) serves and stores pictures with their az login. Empty: nobody.')
param operatorPrincipalId string

// Storage Blob Data Contributor: read, write and delete blobs, nothing else; what the handler
// needs on the pictures' container (src/pictures/blob.rs).
var pictureRoleId = 'ba92f5b4-2d11-453d-a403-e96b0029c9fe'


// The roles the Functions host needs with an identity-based AzureWebJobsStorage: blobs (host
// state and the deployment package), queues and tables (used by the host and some triggers).
var storageRoles = [
  {
    name: 'Storage Blob Data Owner'
    id: 'b7e6dc6d-f1e8-4753-8033-0f276bb0955b'
  }
  {
    name: 'Storage Queue Data Contributor'
    id: '974c5e8b-45b9-4653-ba55-5f855dd0fb88'
  }
  {
    name: 'Storage Table Data Contributor'
    id: '0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3'
  }
]

// The account: Entra ID only, TLS 1.2, nothing public.
resource storage 'Microsoft.Storage/storageAccounts@2025-01-01' = {
  name: storageAccountName
  location: location
  tags: tags
  kind: 'StorageV2'
  sku: {
    name: 'Standard_LRS'
  }
  properties: {
    allowSharedKeyAccess: false
    defaultToOAuthAuthentication: true
    allowBlobPublicAccess: false
    minimumTlsVersion: 'TLS1_2'
    supportsHttpsTrafficOnly: true
    accessTier: 'Hot'
  }
}

// Parent of the deployment container.
resource blobService 'Microsoft.Storage/storageAccounts/blobServices@2025-01-01' = {
  parent: storage
  name: 'default'
}

// Flex Consumption reads the app package from here.
resource deploymentContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2025-01-01' = {
  parent: blobService
  name: deploymentContainerName
  properties: {
    publicAccess: 'None'
  }
}

// The pictures in posts, served by the handler (never publicly: the account allows no public
// access), each under its writer and post.
resource picturesContainer 'Microsoft.Storage/storageAccounts/blobServices/containers@2025-01-01' = {
  parent: blobService
  name: picturesContainerName
  properties: {
    publicAccess: 'None'
  }
}

// The handler's access to the pictures, on their container alone: it holds even where the
// host's roles on the account below change.
resource picturesRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(picturesContainer.id, principalId, pictureRoleId)
  scope: picturesContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', pictureRoleId)
    principalId: principalId
    principalType: 'ServicePrincipal'
    description: 'Storage Blob Data Contributor on the pictures for the blog Function App'
  }
}

// The operator's access to the pictures, as the app's: a local run against the deployed account
// shows the posts' pictures and stores new ones. Its principal type is left out: the operator is
// a person, or the pipeline's service principal when CI deploys.
resource operatorPicturesRole 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(operatorPrincipalId)) {
  name: guid(picturesContainer.id, operatorPrincipalId, pictureRoleId)
  scope: picturesContainer
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', pictureRoleId)
    principalId: operatorPrincipalId
    description: 'Storage Blob Data Contributor on the pictures for the blog\'s operator'
  }
}

// The identity's data-plane access to the account.
resource roleAssignments 'Microsoft.Authorization/roleAssignments@2022-04-01' = [
  for role in storageRoles: {
    name: guid(storage.id, principalId, role.id)
    scope: storage
    properties: {
      roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', role.id)
      principalId: principalId
      principalType: 'ServicePrincipal'
      description: '${role.name} for the blog Function App'
    }
  }
]

output name string = storage.name
output blobEndpoint string = storage.properties.primaryEndpoints.blob
output picturesContainerName string = picturesContainer.name
output deploymentContainerUrl string = '${storage.properties.primaryEndpoints.blob}${deploymentContainer.name}'
