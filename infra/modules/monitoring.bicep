// Log Analytics + workspace-based Application Insights, and the identity's right to send
// telemetry with Entra ID (local, key-based ingestion is disabled).

param location string
param tags object
param logAnalyticsName string
param appInsightsName string

@description('Principal id of the identity that publishes telemetry (the Function App\'s).')
param publisherPrincipalId string

@description('Most GB of logs and telemetry the workspace takes in a day; past it, ingestion stops until the daily reset hour Azure sets for the workspace and so do the log alerts. -1: no cap.')
param dailyCapGb int

// Built-in role "Monitoring Metrics Publisher".
var monitoringMetricsPublisherRoleId = '3913510d-42f4-4e42-8a64-420c390055eb'

// Where the telemetry is stored: workspace-based Application Insights keeps its data here.
resource workspace 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: logAnalyticsName
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: 30
    // Every request writes a line: a cap keeps a flood (or a loop) from writing the month's bill
    // in a day.
    workspaceCapping: {
      dailyQuotaGb: dailyCapGb
    }
  }
}

// Requests, traces and dependencies of the Functions host (and the handler's log lines).
resource appInsights 'Microsoft.Insights/components@2020-02-02' = {
  name: appInsightsName
  location: location
  tags: tags
  kind: 'web'
  properties: {
    Application_Type: 'web'
    WorkspaceResourceId: workspace.id
    // Entra ID only: the host authenticates with APPLICATIONINSIGHTS_AUTHENTICATION_STRING.
    DisableLocalAuth: true
  }
}

// Lets the app's identity send telemetry to this component (needed because DisableLocalAuth).
resource metricsPublisher 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(appInsights.id, publisherPrincipalId, monitoringMetricsPublisherRoleId)
  scope: appInsights
  properties: {
    roleDefinitionId: subscriptionResourceId('Microsoft.Authorization/roleDefinitions', monitoringMetricsPublisherRoleId)
    principalId: publisherPrincipalId
    principalType: 'ServicePrincipal'
  }
}

output connectionString string = appInsights.properties.ConnectionString
output appInsightsId string = appInsights.id
