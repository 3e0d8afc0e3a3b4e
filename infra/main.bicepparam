// Parameters of one deployment of main.bicep. `location` is left to its default (the resource
// group's region), which a parameters file cannot compute.
using 'main.bicep'

param namePrefix = 'blog'

// Serverless suits a blog's spiky, mostly idle traffic; set false for provisioned autoscale.
param cosmosServerless = true

param maximumInstanceCount = 40

// Sign-in: the Entra ID app registration is created by this deployment (modules/signin.bicep).
// To use one that exists instead, set authClientId (and authIdentifierUri); to deploy a
// read-only blog on purpose, set createAppRegistration = false. See docs/deploy.md.
param createAppRegistration = true

param tags = {
  project: 'cosmos-blog'
}

// Other applications allowed to call the API with a token, comma-separated, from the environment
// (`azd env set BLOG_API_CLIENT_IDS <id>,<id>`: azd compiles this file with its environment,
// azure-dev bicep_provider.go). The GitHub workflow names its own principal here, whose smoke
// test writes with an application token.
param apiClientApplicationIds = empty(readEnvironmentVariable('BLOG_API_CLIENT_IDS', '')) ? [] : split(readEnvironmentVariable('BLOG_API_CLIENT_IDS', ''), ',')

// A tenant whose app management policy requires a service management reference on every new
// registration: `azd env set BLOG_SERVICE_MANAGEMENT_REFERENCE <value>` (docs/deploy.md).
param serviceManagementReference = readEnvironmentVariable('BLOG_SERVICE_MANAGEMENT_REFERENCE', '')

// Where the alerts (infra/modules/operations.bicep) are sent, if anywhere:
// `azd env set BLOG_ALERT_EMAIL you@example.com` before `azd up`.
param alertEmail = readEnvironmentVariable('BLOG_ALERT_EMAIL', '')

// An account restored from backup to run on instead of the one this template names:
// `azd env set BLOG_COSMOS_ACCOUNT_NAME <name>` (docs/deploy.md, "Restoring from backup").
param cosmosAccountName = readEnvironmentVariable('BLOG_COSMOS_ACCOUNT_NAME', '')

// Continuous backup (the default); `azd env set BLOG_COSMOS_BACKUP periodic` keeps the periodic
// backup of an account deployed before, until it is moved (docs/deploy.md, "Restoring from backup").
param cosmosContinuousBackup = readEnvironmentVariable('BLOG_COSMOS_BACKUP', 'continuous') != 'periodic'
