// Parameters of one deployment of main.bicep. `location` is left to its default (the resource
// group's region), which a parameters file cannot compute.
using 'main.bicep'

param namePrefix = 'blog'

// Serverless suits a blog's spiky, mostly idle traffic; set false for provisioned autoscale.
param cosmosServerless = true

param maximumInstanceCount = 40

// The Entra ID app registration users sign in to (create it once: az ad app create ...).
param authClientId = ''

param tags = {
  project: 'cosmos-blog'
}
