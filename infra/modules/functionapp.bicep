// The Function App running the Rust custom handler (`handler`) on Linux: on Flex Consumption by
// default, or on a dedicated App Service plan (`hostingPlan`), which costs less past a few
// hundred thousand views a day (`handler cost`, docs/deploy.md "Hosting plan").
// Every connection is identity-based: AzureWebJobsStorage, the deployment container, Cosmos DB
// (the `CosmosDB` setting family, which the cosmosDBTrigger's `connection` names too) and
// Application Insights.

param location string
param tags object
param planName string
param appName string

@description('Resource id of the user-assigned identity the app runs as.')
param identityId string

@description('Client id of that identity (picks it for every identity-based connection).')
param identityClientId string

@description('Resource id of the identity App Service Authentication signs users in with, as the registration\'s credential; it is used for nothing else and holds no role.')
param signInIdentityId string

@description('Client id of that sign-in identity.')
param signInIdentityClientId string

param storageAccountName string

@description('URL of the blob container holding the deployment package.')
param deploymentContainerUrl string

@description('The storage account\'s blob endpoint, where the pictures are kept.')
param picturesBlobEndpoint string

@description('The pictures\' container.')
param picturesContainerName string

param appInsightsConnectionString string
param cosmosEndpoint string
param databaseName string

@description('flex: Flex Consumption, billed per execution and for memory while executing. Otherwise a dedicated Linux App Service plan of that size, billed by the hour, one instance.')
@allowed([
  'flex'
  'B1'
  'S1'
  'P0v3'
  'P1v3'
])
param hostingPlan string = 'flex'

@description('Flex Consumption allows 40 to 1000 (a dedicated plan ignores it).')
@minValue(40)
@maxValue(1000)
param maximumInstanceCount int

// 512 by default (main.bicep): Flex Consumption bills the instance's memory for the time it
// executes, and the handler at its peak, eight large photos at once, holds about 220 MiB
// (BENCHMARKS.md, "Pictures"); the host runs in a buffer of its own that is not billed
// (docs/deploy.md, "Instance size", with the sources).
@description('Memory of each instance, in MB.')
@allowed([
  512
  2048
  4096
])
param instanceMemoryMB int

@description('Client id of the Entra ID app registration users sign in to; empty leaves App Service Authentication off, and then every write is answered 401.')
param authClientId string = ''

@description('true: the registration takes people of any work or school tenant, and the issuer is not tied to this one.')
param authMultipleTenants bool = false

@description('The audiences an access token may carry: the registration\'s client id (v2.0 tokens) and its identifier URI.')
param authAudiences array = []

@description('Client ids of the applications whose tokens are accepted (the token\'s appid or azp claim); any other application of the tenant is refused.')
param authAllowedApplications array = []

@description('BLOG_PUBLIC_URL: the blog\'s address as readers reach it, `https://<host>` without a path; every absolute link of the pages and Atom feeds (canonical, og:url, og:image) names it.')
param publicUrl string

@description('true: readers come through Azure Front Door, and App Service Authentication builds its redirects from the host Front Door says the reader asked for.')
param behindFrontDoor bool = false

@description('BLOG_TOKEN_KEY: the key continuation tokens are signed with, shared by every instance.')
@secure()
param tokenSigningKey string

// The app setting whose name tells App Service Authentication to use a managed identity's
// federated credential as the registration's client credential ("Configure your App Service or
// Azure Functions app to use Microsoft Entra sign-in": "Use a managed identity instead of a
// secret"); its value is the identity's client id.
var signInCredentialSetting = 'OVERRIDE_USE_MI_FIC_ASSERTION_CLIENTID'

var flex = hostingPlan == 'flex'

// The memory a dedicated plan's instance has, in MB (B1 and S1 1.75 GB, P0v3 4 GB, P1v3 8 GB:
// the App Service plans' pricing page), of which the pictures being decoded may hold a quarter:
// the Functions host, its extensions and the handler share the rest.
var dedicatedMemoryMB = {
  B1: 1792
  S1: 1792
  P0v3: 4096
  P1v3: 8192
}

// Flex Consumption: per-execution billing, scale to zero, Linux only. A dedicated plan: its
// instance by the hour, Linux (`reserved`), one instance (`sku.capacity`: `numberOfWorkers` is
// read-only in Azure's type definitions, Azure/bicep-types-az#2438), never zone redundant (AVM's
// avm/res/web/serverfarm makes P plans zone redundant unless told).
resource plan 'Microsoft.Web/serverfarms@2024-11-01' = {
  name: planName
  location: location
  tags: tags
  kind: flex ? 'functionapp' : 'linux'
  sku: flex
    ? {
        name: 'FC1'
        tier: 'FlexConsumption'
      }
    : {
        name: hostingPlan
        capacity: 1
      }
  properties: {
    reserved: true
    zoneRedundant: false
  }
}

// What a dedicated plan needs and Flex Consumption refuses (Flex takes the runtime from
// functionAppConfig): the host's version, the custom handler's runtime (host.json names the
// handler), and the package azd's zip deploy (azure-dev service_target_functionapp.go: Kudu's
// /api/zipdeploy off Flex) leaves, run as it is ("Run your functions from a package file":
// `1` on Dedicated Linux).
var dedicatedSettings = [
  {
    name: 'FUNCTIONS_EXTENSION_VERSION'
    value: '~4'
  }
  {
    name: 'FUNCTIONS_WORKER_RUNTIME'
    value: 'custom'
  }
  {
    name: 'WEBSITE_RUN_FROM_PACKAGE'
    value: '1'
  }
]

// The app: custom runtime (the host starts `handler`, see host.json); its package from blob
// storage on Flex Consumption, from azd's zip deploy on a dedicated plan.
resource app 'Microsoft.Web/sites@2024-11-01' = {
  name: appName
  location: location
  // azd deploys the service `blog` (azure.yaml) to the resource carrying this tag.
  tags: union(tags, {
    'azd-service-name': 'blog'
  })
  kind: 'functionapp,linux'
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
      '${signInIdentityId}': {}
    }
  }
  properties: {
    serverFarmId: plan.id
    httpsOnly: true
    // No instance affinity: the handler keeps no session in memory, and App Service's
    // ARRAffinity cookie would make every returning reader's request carry a cookie, which the
    // handler answers as personal (`private`), so no shared cache would keep it. A template that
    // does not say so gets affinity on (azure-functions-host#4044, open).
    clientAffinityEnabled: false
    // null leaves a property out of what is deployed, as AVM's avm/res/web/site passes its
    // optional ones.
    functionAppConfig: flex
      ? {
          deployment: {
            storage: {
              type: 'blobContainer'
              value: deploymentContainerUrl
              authentication: {
                type: 'UserAssignedIdentity'
                userAssignedIdentityResourceId: identityId
              }
            }
          }
          scaleAndConcurrency: {
            instanceMemoryMB: instanceMemoryMB
            maximumInstanceCount: maximumInstanceCount
          }
          runtime: {
            name: 'custom'
            version: '1.0'
          }
        }
      : null
    siteConfig: {
      minTlsVersion: '1.2'
      // No ftpsState: Flex Consumption refuses it (ARM error 51021); FTP is off through the
      // publishing-credentials policies below.
      // A dedicated plan stops an idle app, and then only HTTP wakes it: Always On keeps the
      // change-feed functions running ("Dedicated hosting plans", Always On). Its Linux image
      // is chosen by FUNCTIONS_EXTENSION_VERSION with an empty linuxFxVersion, as Microsoft's
      // stack data for a custom handler on Linux gives it (Az.Functions, FunctionsStackFlexData
      // custom.json).
      alwaysOn: flex ? null : true
      linuxFxVersion: flex ? null : ''
      appSettings: concat(flex ? [] : dedicatedSettings, [
        // The host's storage, reached with the identity.
        {
          name: 'AzureWebJobsStorage__accountName'
          value: storageAccountName
        }
        {
          name: 'AzureWebJobsStorage__credential'
          value: 'managedidentity'
        }
        {
          name: 'AzureWebJobsStorage__clientId'
          value: identityClientId
        }
        // Telemetry, authenticated with the identity (the component refuses keys).
        {
          name: 'APPLICATIONINSIGHTS_CONNECTION_STRING'
          value: appInsightsConnectionString
        }
        {
          name: 'APPLICATIONINSIGHTS_AUTHENTICATION_STRING'
          value: 'ClientId=${identityClientId};Authorization=AAD'
        }
        // Cosmos DB with Entra ID, read by the handler and by the cosmosDBTrigger (connection 'CosmosDB').
        {
          name: 'CosmosDB__accountEndpoint'
          value: cosmosEndpoint
        }
        {
          name: 'CosmosDB__credential'
          value: 'managedidentity'
        }
        {
          name: 'CosmosDB__clientId'
          value: identityClientId
        }
        {
          name: 'COSMOS_DATABASE'
          value: databaseName
        }
        {
          name: 'BLOG_TOKEN_KEY'
          value: tokenSigningKey
        }
        // The address the handler writes into every absolute link, from here and never from a
        // request's Host or X-Forwarded-Host: a page Front Door keeps must not carry a host an
        // attacker sent. WEBSITE_HOSTNAME, the handler's fallback, is the app's own host at best,
        // never Front Door's (resources.bicep, publicUrl).
        {
          name: 'BLOG_PUBLIC_URL'
          value: publicUrl
        }
        // The pictures in posts, in Blob Storage with the identity (src/config.rs, PICTURES_SETTING).
        {
          name: 'BLOG_PICTURES__blobServiceUri'
          value: picturesBlobEndpoint
        }
        {
          name: 'BLOG_PICTURES__clientId'
          value: identityClientId
        }
        {
          name: 'BLOG_PICTURES_CONTAINER'
          value: picturesContainerName
        }
        // The memory the pictures being decoded may hold at once: half the instance's (256 MB on
        // the smallest, the same as a local run's default), beside the handler's own at rest
        // (about 70 MiB) and its bodies' buffer (64 MiB); the host's own memory is outside the
        // instance's (docs/api.md, "Pictures in posts").
        {
          name: 'BLOG_PICTURE_MEMORY_MB'
          value: string(flex ? instanceMemoryMB / 2 : dedicatedMemoryMB[hostingPlan] / 4)
        }
        // The front page is an HTTP function at the root: the host's own home page must not answer it.
        {
          name: 'AzureWebJobsDisableHomepage'
          value: 'true'
        }
        // The data-plane role cannot create containers; this template did.
        {
          name: 'BLOG_CREATE_CONTAINERS'
          value: 'false'
        }
        // App Service Authentication redeems sign-in codes with the sign-in identity instead of
        // a secret: the setting named by clientSecretSettingName below holds its client id.
        {
          name: signInCredentialSetting
          value: signInIdentityClientId
        }
      ])
    }
  }
}

// No publishing with user names and passwords: deployments use Entra ID.
// `location` is not in Azure's type definition of these policies, yet App Service refuses them
// without it: 400 "The parameter location has an invalid value" (Azure/bicep-types-az issues
// 1317, 1529, 1571, open, labelled inaccuracy; Azure/bicep 5531). Microsoft's AVM module
// avm/res/web/site/basic-publishing-credentials-policy sets it too. The compiler warns (BCP187);
// tests/infra/type_definitions.rs lists this exception with those issues.
resource scmBasicAuth 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-11-01' = {
  parent: app
  name: 'scm'
  #disable-next-line BCP187
  location: location
  properties: {
    allow: false
  }
}

resource ftpBasicAuth 'Microsoft.Web/sites/basicPublishingCredentialsPolicies@2024-11-01' = {
  parent: app
  name: 'ftp'
  #disable-next-line BCP187
  location: location
  properties: {
    allow: false
  }
}

// App Service Authentication: the platform validates the caller's Entra ID token and passes
// their identity to the handler in X-MS-CLIENT-PRINCIPAL-ID (clients cannot set that header
// while this is on). Anonymous requests still reach the app: reads are public, and the handler
// answers 401 to anonymous writes.
resource authentication 'Microsoft.Web/sites/config@2024-11-01' = if (!empty(authClientId)) {
  parent: app
  name: 'authsettingsV2'
  properties: {
    platform: {
      enabled: true
    }
    globalValidation: {
      requireAuthentication: false
      unauthenticatedClientAction: 'AllowAnonymous'
    }
    identityProviders: {
      azureActiveDirectory: {
        enabled: true
        registration: {
          clientId: authClientId
          // No secret: this app setting holds the user-assigned identity's client id, and
          // the registration trusts that identity as a federated credential (signin.bicep).
          clientSecretSettingName: signInCredentialSetting
          // A tenant's own v2.0 issuer; for several tenants, `organizations`: App Service
          // Authentication treats any issuer but a tenant's as multitenant and then checks no
          // tenant (configure-authentication-provider-aad.md).
          openIdIssuer: authMultipleTenants ? '${environment().authentication.loginEndpoint}organizations/v2.0' : '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'
        }
        validation: {
          allowedAudiences: authAudiences
          // Without it, a token any application of the tenant obtained for the blog's API would be
          // accepted ("Use a built-in authorization policy", configure-authentication-provider-aad).
          defaultAuthorizationPolicy: {
            allowedApplications: authAllowedApplications
          }
        }
      }
    }
    login: {
      tokenStore: {
        enabled: false
      }
    }
    // Behind Front Door, the sign-in's redirects (to Entra ID with its redirect_uri, and back to
    // the page) must name the Front Door's host, not the origin's that Front Door sends as Host:
    // `Standard` makes App Service Authentication read X-Forwarded-Host and X-Forwarded-Proto,
    // which Front Door sets, overwriting a client's ("Considerations when using Azure Front
    // Door" in overview-authentication-authorization.md; Front Door's
    // front-door-http-headers-protocol.md). The app stays reachable at its own host, where a
    // caller may send X-Forwarded-Host itself: that moves only its own redirects, to a callback
    // Entra ID refuses unless the registration lists it (signin.bicep), and no cache keeps it.
    // Without Front Door, `NoProxy`: the request's Host.
    httpSettings: {
      forwardProxy: {
        convention: behindFrontDoor ? 'Standard' : 'NoProxy'
      }
    }
  }
}

output name string = app.name
output defaultHostName string = app.properties.defaultHostName
