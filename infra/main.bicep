// The blog's Azure infrastructure: one resource group holding a Cosmos DB for NoSQL account
// (the article's V3 model), a Function App on Flex Consumption running the Rust custom handler,
// and what that app needs to run without any secret: one user-assigned identity, a storage
// account reached with that identity, and workspace-based Application Insights.
//
// Deploy: az deployment group create -g <rg> -f infra/main.bicep -p infra/main.bicepparam
targetScope = 'resourceGroup'

@description('Azure region for every resource.')
param location string = resourceGroup().location

@description('Prefix of every resource name (letters, digits and hyphens).')
@minLength(2)
@maxLength(10)
param namePrefix string = 'blog'

@description('true: Cosmos DB serverless (pay per request, no throughput to manage). false: provisioned throughput, autoscale, shared by the database\'s containers.')
param cosmosServerless bool = true

@description('Autoscale maximum RU/s of the database; used only when cosmosServerless is false.')
@minValue(1000)
param cosmosAutoscaleMaxThroughput int = 1000

@description('Most instances the Function App may scale out to (Flex Consumption allows 40 to 1000).')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 40

@description('The key the instances sign the lists\' continuation tokens with; the same on every instance. A new one each deployment unless given (tokens issued before then are refused).')
@secure()
param tokenSigningKey string = newGuid()

@description('Client id of the Entra ID app registration users sign in to (App Service Authentication). Empty: no sign-in, every write is answered 401.')
param authClientId string = ''

@description('Tags applied to every resource.')
param tags object = {}

// One suffix per resource group keeps the globally unique names (storage, Cosmos DB, the app's
// host name) stable across redeployments and distinct between environments.
var suffix = uniqueString(resourceGroup().id)
var cleanPrefix = toLower(replace(namePrefix, '-', ''))
var names = {
  identity: 'id-${namePrefix}-${suffix}'
  storage: take('st${cleanPrefix}${suffix}', 24)
  cosmos: toLower('cosmos-${namePrefix}-${suffix}')
  logAnalytics: 'log-${namePrefix}-${suffix}'
  appInsights: 'appi-${namePrefix}-${suffix}'
  plan: 'plan-${namePrefix}-${suffix}'
  functionApp: 'func-${namePrefix}-${suffix}'
}

// The app's only credential: every data-plane call (Cosmos DB, storage, telemetry) is made with
// this identity, so no keys or connection strings with secrets exist anywhere.
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: names.identity
  location: location
  tags: tags
}

// Logs and telemetry of the Functions host and the handler.
module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    location: location
    tags: tags
    logAnalyticsName: names.logAnalytics
    appInsightsName: names.appInsights
    publisherPrincipalId: identity.properties.principalId
  }
}

// The Functions host's own storage (leases, timers, keys) and the deployment package container.
module storage 'modules/storage.bicep' = {
  name: 'storage'
  params: {
    location: location
    tags: tags
    storageAccountName: names.storage
    principalId: identity.properties.principalId
  }
}

// The blog's data: account, database, the four containers and the article's scripts.
module cosmos 'modules/cosmos.bicep' = {
  name: 'cosmos'
  params: {
    location: location
    tags: tags
    accountName: names.cosmos
    serverless: cosmosServerless
    autoscaleMaxThroughput: cosmosAutoscaleMaxThroughput
    principalId: identity.properties.principalId
  }
}

// The custom handler itself. Its inputs come from the other modules' outputs, so it is created
// after their role assignments exist and the host can reach storage and Cosmos DB at first start.
module functionApp 'modules/functionapp.bicep' = {
  name: 'functionApp'
  params: {
    location: location
    tags: tags
    planName: names.plan
    appName: names.functionApp
    identityId: identity.id
    identityClientId: identity.properties.clientId
    storageAccountName: storage.outputs.name
    deploymentContainerUrl: storage.outputs.deploymentContainerUrl
    appInsightsConnectionString: monitoring.outputs.connectionString
    cosmosEndpoint: cosmos.outputs.endpoint
    databaseName: cosmos.outputs.databaseName
    maximumInstanceCount: maximumInstanceCount
    authClientId: authClientId
    tokenSigningKey: tokenSigningKey
  }
}

output functionAppName string = functionApp.outputs.name
output functionAppUrl string = 'https://${functionApp.outputs.defaultHostName}'
output cosmosEndpoint string = cosmos.outputs.endpoint
output resourceGroupName string = resourceGroup().name
