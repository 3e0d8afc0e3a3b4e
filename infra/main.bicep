// `azd up` deploys this (azure.yaml, with main.parameters.json): the resource group, then the
// blog's resources in it (resources.bicep). Subscription-scoped, as Microsoft's azd samples for
// Flex Consumption are, so that azd asks for the region itself, offering only those `location`
// allows (azure-dev pkg/infra/provisioning/bicep/bicep_provider.go: in "bicep mode", a
// template with a parameters file, `ensureParameters` filters the location prompt by the
// parameter's allowed values, locationParameterFilterImpl; with a .bicepparam file or a
// resource-group scope it asks for any region and creates the group there first). A region
// refused here stops the deployment before anything exists: the group is part of it.
targetScope = 'subscription'

@description('The azd environment\'s name (AZURE_ENV_NAME): names the resource group when none is given, and tags it so that azd finds it.')
@minLength(1)
@maxLength(64)
param environmentName string

// Flex Consumption, the function app's plan, is offered in these regions only; elsewhere the
// deployment would stop at the plan, after the account and the app registration were made. The
// list is the one Microsoft's azd samples for Flex Consumption allow (Azure-Samples/
// functions-quickstart-dotnet-azd and mcp-sdk-functions-hosting-python, infra/main.bicep, 2026-02),
// without the canary region eastus2euap; `az functionapp list-flexconsumption-locations` gives
// today's (docs/deploy.md, "Regions").
@description('Azure region for every resource: one where Flex Consumption is offered.')
@allowed([
  'australiaeast'
  'australiasoutheast'
  'brazilsouth'
  'canadacentral'
  'centralindia'
  'centralus'
  'eastasia'
  'eastus'
  'eastus2'
  'francecentral'
  'germanywestcentral'
  'italynorth'
  'japaneast'
  'koreacentral'
  'northcentralus'
  'northeurope'
  'norwayeast'
  'southafricanorth'
  'southcentralus'
  'southeastasia'
  'southindia'
  'spaincentral'
  'swedencentral'
  'uaenorth'
  'uksouth'
  'ukwest'
  'westcentralus'
  'westeurope'
  'westus'
  'westus2'
  'westus3'
])
@metadata({
  azd: {
    type: 'location'
  }
})
param location string

@description('The resource group to deploy into (AZURE_RESOURCE_GROUP: an existing deployment keeps its own). Empty: rg-<environmentName>.')
param resourceGroupName string = ''

@description('Prefix of every resource name (letters, digits and hyphens).')
@minLength(2)
@maxLength(10)
param namePrefix string = 'blog'

@description('true: Cosmos DB serverless (pay per request, no throughput to manage). false: provisioned throughput, autoscale.')
param cosmosServerless bool = true

@description('Most instances the Function App may scale out to (Flex Consumption allows 40 to 1000).')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int = 40

@description('Where the Function App runs: flex (Flex Consumption: per execution, scales to zero; the default) or a dedicated Linux App Service plan of one instance, by the hour (B1, S1, P0v3, P1v3): cheaper past a few hundred thousand views a day (`handler cost --hosting-plan B1`; docs/deploy.md, "Hosting plan").')
@allowed([
  'flex'
  'B1'
  'S1'
  'P0v3'
  'P1v3'
])
param hostingPlan string = 'flex'

@description('Memory of each Function App instance, in MB (Flex Consumption: 512, 2048 or 4096; docs/deploy.md, "Instance size").')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int = 512

// azd makes this once, keeps it in the environment's configuration (infra.parameters), and
// `azd pipeline config` gives it to CI as the secret BLOG_TOKEN_KEY (azure-dev bicep_provider.go
// ensureParameters, `AzdMetadataTypeGenerate`; Parameters, LocalPrompt; pipeline.go
// mergeProjectVariablesAndSecrets): the same key on every deployment, from here or from CI, so
// that a reader's "next page" survives a deploy. A new key, only when asked: docs/deploy.md.
@description('The key the lists\' continuation tokens are signed with.')
@secure()
@minLength(16)
@metadata({
  azd: {
    type: 'generate'
    config: {
      length: 48
      noSpecial: true
    }
  }
})
param tokenSigningKey string

@description('Create the Entra ID app registration people sign in with (docs/deploy.md). false with no authClientId: a read-only blog, on purpose.')
param createAppRegistration bool = true

@description('AzureADMyOrg (this tenant) or AzureADMultipleOrgs (any work or school tenant).')
@allowed([
  'AzureADMyOrg'
  'AzureADMultipleOrgs'
])
param signInAudience string = 'AzureADMyOrg'

@description('Client id of an existing app registration to use instead of creating one (docs/deploy.md). Empty: create one.')
param authClientId string = ''

@description('The identifier URI (audience) of that existing registration\'s API, when it has one.')
param authIdentifierUri string = ''

@description('Client ids of other applications allowed to call the API, comma-separated (BLOG_API_CLIENT_IDS).')
param apiClientIds string = ''

@description('The service management reference a tenant\'s app management policy may require (BLOG_SERVICE_MANAGEMENT_REFERENCE). Empty: none.')
param serviceManagementReference string = ''

@description('Client id of the GitHub workflow\'s service principal (AZURE_PIPELINE_CLIENT_ID, kept by `azd pipeline config`): made an owner of the sign-in registration and its service principal. Empty: none.')
param pipelineClientId string = ''

@description('Resource id of the GitHub workflow\'s user-assigned managed identity (AZURE_PIPELINE_MSI_CLIENT_ID, kept by `azd pipeline config`; taken before pipelineClientId, as azd does): made an owner of the sign-in registration and its service principal. Empty: none.')
param pipelineIdentityId string = ''

@description('Object id of the operator: the Cosmos DB data role, the pictures\' role, and ownership of the registration. Defaults to whoever deploys.')
param operatorPrincipalId string = deployer().objectId

@description('The Cosmos DB account to use, by name (BLOG_COSMOS_ACCOUNT_NAME: an account restored from backup). Empty: the one the template names.')
param cosmosAccountName string = ''

@description('continuous (7 days, the default) or periodic (an account deployed before, not moved yet): BLOG_COSMOS_BACKUP.')
@allowed([
  'continuous'
  'periodic'
])
param cosmosBackup string = 'continuous'

@description('Where the alerts are sent (BLOG_ALERT_EMAIL). Empty: the person deploying, when their sign-in name is a mailbox; else the subscription\'s Owners.')
param alertEmail string = ''

@description('Most GB of logs a day (BLOG_LOGS_DAILY_CAP_GB): twice what a blog of 1,000,000 page views a day writes (docs/costs.md\'s cost table); -1: no cap.')
@minValue(-1)
param logsDailyCapGb int = 2

@description('none (the default) or standard: an Azure Front Door Standard profile in front of the app, caching anonymous answers for a few seconds (BLOG_FRONT_DOOR; docs/deploy.md, "A CDN in front"). Standard has a fixed monthly fee.')
@allowed([
  'none'
  'standard'
])
param frontDoor string = 'none'

@description('Tags applied to every resource.')
param tags object = {
  project: 'cosmos-blog'
}

// azd finds the environment's resource group by this tag when AZURE_RESOURCE_GROUP is not set.
var groupTags = union(tags, {
  'azd-env-name': environmentName
})

resource group 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: empty(resourceGroupName) ? 'rg-${environmentName}' : resourceGroupName
  location: location
  tags: groupTags
}

module blog 'resources.bicep' = {
  name: 'blog'
  scope: group
  params: {
    location: location
    namePrefix: namePrefix
    cosmosServerless: cosmosServerless
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    hostingPlan: hostingPlan
    tokenSigningKey: tokenSigningKey
    createAppRegistration: createAppRegistration
    signInAudience: signInAudience
    authClientId: authClientId
    authIdentifierUri: authIdentifierUri
    apiClientApplicationIds: empty(apiClientIds) ? [] : split(apiClientIds, ',')
    serviceManagementReference: serviceManagementReference
    pipelineClientId: pipelineClientId
    pipelineIdentityId: pipelineIdentityId
    operatorPrincipalId: operatorPrincipalId
    cosmosAccountName: cosmosAccountName
    cosmosContinuousBackup: cosmosBackup == 'continuous'
    alertEmail: alertEmail
    logsDailyCapGb: logsDailyCapGb
    frontDoor: frontDoor == 'standard'
    tags: tags
  }
}

// Outputs, in the names azd keeps in its environment (.azure/<env>/.env), read by azure.yaml's
// hooks and by docs/deploy.md.
output AZURE_RESOURCE_GROUP string = group.name
output BLOG_URL string = blog.outputs.BLOG_URL
output BLOG_FUNCTION_APP_NAME string = blog.outputs.BLOG_FUNCTION_APP_NAME
output BLOG_SIGN_IN string = blog.outputs.BLOG_SIGN_IN
output BLOG_AUTH_CLIENT_ID string = blog.outputs.BLOG_AUTH_CLIENT_ID
output BLOG_API_IDENTIFIER_URI string = blog.outputs.BLOG_API_IDENTIFIER_URI
output BLOG_SIGN_IN_IDENTITY_PRINCIPAL_ID string = blog.outputs.BLOG_SIGN_IN_IDENTITY_PRINCIPAL_ID
output BLOG_API_SCOPE string = blog.outputs.BLOG_API_SCOPE
output BLOG_COSMOS_ENDPOINT string = blog.outputs.BLOG_COSMOS_ENDPOINT
output BLOG_COSMOS_DATABASE string = blog.outputs.BLOG_COSMOS_DATABASE
output BLOG_RESOURCE_GROUP string = blog.outputs.BLOG_RESOURCE_GROUP
output BLOG_TENANT_ID string = blog.outputs.BLOG_TENANT_ID
output BLOG_APP_INSIGHTS_NAME string = blog.outputs.BLOG_APP_INSIGHTS_NAME
output BLOG_PICTURES_BLOB_ENDPOINT string = blog.outputs.BLOG_PICTURES_BLOB_ENDPOINT
output BLOG_PICTURES_CONTAINER string = blog.outputs.BLOG_PICTURES_CONTAINER
output BLOG_ALERT_EMAIL string = blog.outputs.BLOG_ALERT_EMAIL
output BLOG_FRONT_DOOR_URL string = blog.outputs.BLOG_FRONT_DOOR_URL
