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
