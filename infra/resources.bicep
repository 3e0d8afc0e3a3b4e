// The blog's Azure infrastructure, in one resource group: a Cosmos DB for NoSQL account (the
// article's V3 model), a Function App on Flex Consumption running the Rust custom handler, and
// what that app needs to run without any secret: one user-assigned identity, a storage account
// reached with that identity, and workspace-based Application Insights.
//
// main.bicep deploys this into the resource group it makes (`azd up`, azure.yaml), after checking
// the region; docs/deploy.md, "Without azd", deploys it into a group of your own.
targetScope = 'resourceGroup'

@description('Azure region of every resource: one where Flex Consumption is offered (main.bicep allows only those).')
param location string

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

@description('The key the instances sign the lists\' continuation tokens with; the same on every instance and every deployment, so that a reader\'s next page survives a deploy. main.bicep has azd generate it once.')
@secure()
@minLength(16)
param tokenSigningKey string

@description('Create the Entra ID app registration people sign in with, in this deployment (needs the right to create applications in the tenant: by default every member user has it). false with no authClientId: a read-only blog, on purpose.')
param createAppRegistration bool = true

@description('Who may sign in to a registration created here: AzureADMyOrg, the people of this tenant; AzureADMultipleOrgs, people of any Entra ID (work or school) tenant. Personal Microsoft accounts cannot sign in through App Service Authentication with a managed identity as credential, which serves workforce tenants only (docs/deploy.md, "A public blog").')
@allowed([
  'AzureADMyOrg'
  'AzureADMultipleOrgs'
])
param signInAudience string = 'AzureADMyOrg'

@description('Client id of an app registration that already exists, to use instead of creating one (then its redirect URI, credential and exposed API are yours to set: docs/deploy.md). Empty: create one (createAppRegistration).')
param authClientId string = ''

@description('The identifier URI (audience) of that existing registration\'s API, when it has one.')
param authIdentifierUri string = ''

@description('Client ids of other applications allowed to call the blog\'s API with a user\'s token (besides the blog\'s own sign-in and the Azure CLI). App Service Authentication refuses tokens issued to any other application of the tenant.')
param apiClientApplicationIds array = []

@description('Required by tenants whose app management policy asks every new registration for a Service Tree id or other service management reference (Graph answers 400 otherwise: docs/deploy.md). Empty: none.')
param serviceManagementReference string = ''

@description('Object id of the operator: gets the Cosmos DB data-plane role (handler rebuild-copies, dead-letters) and owns the app registration. Defaults to whoever deploys; empty: nobody.')
param operatorPrincipalId string = deployer().objectId

@description('Tags applied to every resource.')
param tags object = {}

@description('The Cosmos DB account to use, by name; empty: the one this template names. Set to an account restored from backup to bring the app onto it (docs/deploy.md, "Restoring from backup").')
param cosmosAccountName string = ''

@description('Continuous backup, 7 days, on the Cosmos DB account; false keeps periodic backup, for an account deployed before whose move to continuous backup has not been made (docs/deploy.md, "Restoring from backup").')
param cosmosContinuousBackup bool = true

@description('Client id of the service principal the GitHub workflow deploys as (AZURE_PIPELINE_CLIENT_ID, which `azd pipeline config` keeps): made an owner of the sign-in registration and its service principal, so that CI may update them. Empty: none.')
param pipelineClientId string = ''

@description('Resource id of the user-assigned managed identity the GitHub workflow deploys as (AZURE_PIPELINE_MSI_CLIENT_ID, which `azd pipeline config` keeps): as pipelineClientId, and taken before it. Empty: none.')
param pipelineIdentityId string = ''

@description('Where the alerts are sent. Empty: to the person deploying (their sign-in name, when it is a mailbox of this tenant), else to the subscription\'s Owners.')
param alertEmail string = ''

@description('The change-feed lag alert fires when a change waited longer than this many seconds.')
@minValue(30)
param lagAlertSeconds int = 300

@description('The request-unit budget alert fires when the account spends more than this in a day (docs/costs.md\'s cost table).')
@minValue(1000)
param requestUnitsPerDayBudget int = 1000000

@description('Most GB of logs the workspace takes in a day; past it, ingestion (and so the log alerts) stops until the next day. -1: no cap.')
@minValue(-1)
param logsDailyCapGb int = 2

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

@description('Put an Azure Front Door (Standard) in front of the app, caching what the handler marks shareable (modules/frontdoor.bicep). Off by default: it has a fixed monthly fee.')
param frontDoor bool = false

// One suffix per resource group keeps the globally unique names (storage, Cosmos DB, the app's
// host name) stable across redeployments and distinct between environments.
var suffix = uniqueString(resourceGroup().id)
var cleanPrefix = toLower(replace(namePrefix, '-', ''))
var names = {
  identity: 'id-${namePrefix}-${suffix}'
  signInIdentity: 'id-${namePrefix}-signin-${suffix}'
  storage: take('st${cleanPrefix}${suffix}', 24)
  cosmos: empty(cosmosAccountName) ? toLower('cosmos-${namePrefix}-${suffix}') : cosmosAccountName
  logAnalytics: 'log-${namePrefix}-${suffix}'
  appInsights: 'appi-${namePrefix}-${suffix}'
  plan: 'plan-${namePrefix}-${suffix}'
  functionApp: 'func-${namePrefix}-${suffix}'
  frontDoor: 'afd-${namePrefix}-${suffix}'
}

// The function app's default host name, known before the app exists: App Service names an app
// `<name>.azurewebsites.net` unless it opts in, at creation, to a "secure unique default
// hostname" (`<name>-<hash>.<region>-01.azurewebsites.net`) with autoGeneratedDomainNameLabelScope,
// which modules/functionapp.bicep does not set (tests/infra/front_door.rs holds it). The sign-in's
// redirect URI and, without Front Door, the public address below are built from it.
var appHostName = '${names.functionApp}.azurewebsites.net'

// Sign-in: a registration created here, one given, or none (read-only, chosen explicitly).
var createSignIn = createAppRegistration && empty(authClientId)
var signInMode = createSignIn ? 'created' : (empty(authClientId) ? 'off' : 'existing')

// The app's only credential: every data-plane call (Cosmos DB, storage, telemetry) is made with
// this identity, so no keys or connection strings with secrets exist anywhere.
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: names.identity
  location: location
  tags: tags
}

// The registration's credential, and nothing else: App Service Authentication redeems sign-in
// codes with a token of this identity ("Use a managed identity instead of a secret", which asks
// that the identity be used for this only). It holds no role anywhere, so a token it gets
// opens no data.
resource signInIdentity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: names.signInIdentity
  location: location
  tags: tags
}

// The Azure CLI's well-known application id (Microsoft's first-party client): pre-authorized for
// the API's scope (the smoke test's token, without a consent prompt), and allowed to call it.
var azureCliAppId = '04b07795-8ddb-461a-bbee-02f9e1bf7b46'

// Logs and telemetry of the Functions host and the handler.
module monitoring 'modules/monitoring.bicep' = {
  name: 'monitoring'
  params: {
    location: location
    tags: tags
    logAnalyticsName: names.logAnalytics
    appInsightsName: names.appInsights
    publisherPrincipalId: identity.properties.principalId
    dailyCapGb: logsDailyCapGb
  }
}

// The Functions host's own storage (leases, timers, keys), the deployment package container and
// the pictures in posts.
module storage 'modules/storage.bicep' = {
  name: 'storage'
  params: {
    location: location
    tags: tags
    storageAccountName: names.storage
    principalId: identity.properties.principalId
    operatorPrincipalId: operatorPrincipalId
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
    continuousBackup: cosmosContinuousBackup
    autoscaleMaxThroughput: cosmosAutoscaleMaxThroughput
    principalId: identity.properties.principalId
    operatorPrincipalId: operatorPrincipalId
  }
}

// CI's principal, when `azd pipeline config` has made one: an owner of the registration and of
// its service principal beside the person deploying, so that the workflow may update what a
// person made. azd offers a user-assigned managed identity first and keeps its resource id
// (AZURE_PIPELINE_MSI_CLIENT_ID), else a service principal's client id (AZURE_PIPELINE_CLIENT_ID);
// with both kept it uses the identity (azure-dev pkg/pipeline/pipeline_manager.go, Configure:
// "MSI takes precedence over SP"), and so does this.
module pipelineIdentity 'modules/pipeline-identity.bicep' = if (!empty(pipelineIdentityId)) {
  name: 'pipelineIdentity'
  params: {
    resourceId: pipelineIdentityId
  }
}

module pipelinePrincipal 'modules/pipeline-principal.bicep' = if (createSignIn && empty(pipelineIdentityId) && !empty(pipelineClientId)) {
  name: 'pipelinePrincipal'
  params: {
    clientId: pipelineClientId
  }
}

// The pipeline's object id (for owners) and client id (for the allowed applications), if any.
var pipelineOwnerIds = !createSignIn ? [] : !empty(pipelineIdentityId) ? [pipelineIdentity.outputs.principalId] : !empty(pipelineClientId) ? [pipelinePrincipal.outputs.objectId] : []
var pipelineAppIds = !empty(pipelineIdentityId) ? [pipelineIdentity.outputs.clientId] : !empty(pipelineClientId) ? [pipelineClientId] : []

// The Front Door's profile and endpoint, when asked for, before the app and the registration:
// the endpoint's host name is the blog's public address. What routes it to the app comes after
// the app (module cdn below).
module edge 'modules/frontdoor-endpoint.bicep' = if (frontDoor) {
  name: 'frontdoorEndpoint'
  params: {
    tags: tags
    name: names.frontDoor
  }
}

// The blog's public address, the app's BLOG_PUBLIC_URL: every absolute link of its pages and
// Atom feeds names it. Through Front Door, the endpoint's host. Without, the app's own host,
// computed (appHostName): the app cannot be given its own defaultHostName, and the handler's
// fallback, WEBSITE_HOSTNAME, is not one to rely on: no platform source confirms that Flex
// Consumption sets it, and the Functions host itself does without it when it is missing and,
// after a slot swap, corrects only its own copy of a stale one, not the environment the handler
// inherits (azure-functions-host src/WebJobs.Script/HostNameProvider.cs, Value and Synchronize).
var publicUrl = frontDoor ? 'https://${edge.outputs.hostName}' : 'https://${appHostName}'

// The registration people sign in to; its redirect URIs are on the app's host name, known
// already, and on the Front Door's, where readers sign in when there is one.
module signIn 'modules/signin.bicep' = if (createSignIn) {
  name: 'signIn'
  params: {
    uniqueName: 'blog-${suffix}'
    displayName: 'Cosmos DB blog (${names.functionApp})'
    hostNames: frontDoor ? [appHostName, edge.outputs.hostName] : [appHostName]
    credentialPrincipalId: signInIdentity.properties.principalId
    ownerObjectId: operatorPrincipalId
    additionalOwnerIds: pipelineOwnerIds
    preAuthorizedAppIds: [
      azureCliAppId
    ]
    serviceManagementReference: serviceManagementReference
    signInAudience: signInAudience
  }
}

var signInClientId = createSignIn ? signIn.outputs.clientId : authClientId
var signInIdentifierUri = createSignIn ? signIn.outputs.identifierUri : authIdentifierUri

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
    picturesBlobEndpoint: storage.outputs.blobEndpoint
    picturesContainerName: storage.outputs.picturesContainerName
    appInsightsConnectionString: monitoring.outputs.connectionString
    cosmosEndpoint: cosmos.outputs.endpoint
    databaseName: cosmos.outputs.databaseName
    maximumInstanceCount: maximumInstanceCount
    instanceMemoryMB: instanceMemoryMB
    hostingPlan: hostingPlan
    signInIdentityId: signInIdentity.id
    signInIdentityClientId: signInIdentity.properties.clientId
    authClientId: signInClientId
    authMultipleTenants: createSignIn && signInAudience == 'AzureADMultipleOrgs'
    authAudiences: filter([signInClientId, signInIdentifierUri], audience => !empty(audience))
    // The tokens App Service Authentication accepts: those the blog's own sign-in gets (the
    // pages' session), the Azure CLI's and azd's (one client id), and those of the applications
    // the operator names.
    // The pipeline's principal too, once `azd pipeline config` made one: the workflow's smoke
    // test writes with its application token, and a provision from here must not shut it out.
    authAllowedApplications: union([signInClientId, azureCliAppId], apiClientApplicationIds, pipelineAppIds)
    tokenSigningKey: tokenSigningKey
    publicUrl: publicUrl
    behindFrontDoor: frontDoor
  }
}

// Who hears of the alerts when nobody said: the person deploying, by their sign-in name when it
// is a mailbox of this tenant. A service principal has none (CI; `deployer()` then leaves the
// property out, Bicep's "Deployment functions"), and a guest's is `…#EXT#@<tenant>`, which
// receives nothing; then the subscription's Owners are told
// (modules/operations.bicep). Output as BLOG_ALERT_EMAIL, so azd keeps it in the environment and
// `azd pipeline config` carries it to CI: a deployment from CI keeps the same receiver.
// `.?` and `??` compile to ARM functions that answer null for a missing property, where `&&`
// (ARM's `and()`) is not documented to skip its second argument.
var deployerName = deployer().?userPrincipalName ?? ''
var deployerMailbox = contains(deployerName, '#EXT#') ? '' : deployerName
var alertReceiver = empty(alertEmail) ? deployerMailbox : alertEmail

// The operator's workbook and alerts: the handler's lines in Application Insights, the front
// page as the world sees it, and the account's request units.
module operations 'modules/operations.bicep' = {
  name: 'operations'
  params: {
    location: location
    tags: tags
    appInsightsId: monitoring.outputs.appInsightsId
    alertEmail: alertReceiver
    lagAlertSeconds: lagAlertSeconds
    requestUnitsPerDayBudget: requestUnitsPerDayBudget
    workbookDisplayName: 'Blog operations (${names.functionApp})'
    frontPageUrl: 'https://${functionApp.outputs.defaultHostName}/'
    cosmosAccountId: cosmos.outputs.accountId
  }
}

// The edge in front of the app, when asked for: the endpoint routed to the app, with its cache
// rules. Readers and writers use the Front Door's address; the function app stays reachable at
// its own (the smoke test, the availability test).
module cdn 'modules/frontdoor.bicep' = if (frontDoor) {
  name: 'frontdoor'
  params: {
    profileName: edge.outputs.profileName
    endpointName: edge.outputs.endpointName
    originHostName: functionApp.outputs.defaultHostName
  }
}

// Outputs, in the names azd keeps in its environment (.azure/<env>/.env), read by azure.yaml's
// hooks and by docs/deploy.md (az deployment group show ... --query properties.outputs.<name>.value).
output BLOG_URL string = 'https://${functionApp.outputs.defaultHostName}'
output BLOG_FUNCTION_APP_NAME string = functionApp.outputs.name
output BLOG_SIGN_IN string = signInMode
output BLOG_AUTH_CLIENT_ID string = signInClientId
output BLOG_API_IDENTIFIER_URI string = signInIdentifierUri
// The identity an existing registration (authClientId) must trust as a federated credential.
output BLOG_SIGN_IN_IDENTITY_PRINCIPAL_ID string = signInIdentity.properties.principalId
output BLOG_API_SCOPE string = createSignIn ? signIn.outputs.scope : ''
output BLOG_COSMOS_ENDPOINT string = cosmos.outputs.endpoint
output BLOG_COSMOS_DATABASE string = cosmos.outputs.databaseName
output BLOG_RESOURCE_GROUP string = resourceGroup().name
// The tenant the registration is in: the smoke test asks it for a token (az ... --tenant).
output BLOG_TENANT_ID string = tenant().tenantId
output BLOG_APP_INSIGHTS_NAME string = names.appInsights
// The pictures' container and its account's blob endpoint: infra/hooks/local-settings.sh gives
// them to the handler run on the operator's machine, which has the same role on them as the app.
output BLOG_PICTURES_BLOB_ENDPOINT string = storage.outputs.blobEndpoint
output BLOG_PICTURES_CONTAINER string = storage.outputs.picturesContainerName
// Where the alerts go (see alertReceiver); empty: to the subscription's Owners.
output BLOG_ALERT_EMAIL string = alertReceiver
// The blog through Azure Front Door; empty when there is none (frontDoor false).
output BLOG_FRONT_DOOR_URL string = frontDoor ? 'https://${edge.outputs.hostName}' : ''
