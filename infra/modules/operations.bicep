// What an operator watches: one workbook (requests and request units by route, the slowest
// routes, change-feed lag, dead letters, 5xx and 429s) and four log alerts, all on the
// handler's own log lines in Application Insights. The queries are the files in ../queries; each
// reads only fields the handler writes (tests/telemetry.rs holds them to the real lines), and
// docs/deploy.md says what each alert means and what to do.

param location string
param tags object

@description('Resource id of the Application Insights component the Functions host sends the handler\'s lines to.')
param appInsightsId string

@description('Where the alerts are sent; empty: they fire in the portal only (Monitor > Alerts).')
param alertEmail string = ''

@description('Alert when a change waited longer than this many seconds for the change-feed functions.')
@minValue(30)
param lagAlertSeconds int = 300

@description('Alert when the handler\'s requests spend more request units than this in a day.')
@minValue(1000)
param requestUnitsPerDayBudget int = 1000000

@description('The workbook\'s name as the portal shows it.')
param workbookDisplayName string

// Every query runs against the Application Insights component, over its classic tables.
var scopes = [
  appInsightsId
]

// Each of the workbook's queries covers the last day (in milliseconds, as workbooks count).
var day = 86400000

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  // A workbook's name must be a GUID; a new one each deployment would be refused as a second
  // workbook of the same display name, so it is derived from what stays the same.
  name: guid(resourceGroup().id, appInsightsId, 'blog-operations-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: workbookDisplayName
    category: 'workbook'
    sourceId: appInsightsId
    version: 'Notebook/1.0'
    serializedData: string({
      version: 'Notebook/1.0'
      items: [
        {
          type: 1
          name: 'about'
          content: {
            json: '## The blog, the last 24 hours\nFrom the handler\'s own log lines (`blog::http: request`, `blog::changefeed: delivered`, `lag`, `set aside`, `blog::cosmos: throttled`). docs/deploy.md, "Reading the workbook", explains each part.'
          }
        }
        {
          type: 3
          name: 'requests-by-route'
          content: {
            version: 'KqlItem/1.0'
            title: 'Requests and request units by route'
            query: loadTextContent('../queries/requests-by-route.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'table'
          }
        }
        {
          type: 3
          name: 'ru-over-time'
          content: {
            version: 'KqlItem/1.0'
            title: 'Request units per quarter hour, by route'
            query: loadTextContent('../queries/ru-over-time.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'timechart'
          }
        }
        {
          type: 3
          name: 'slowest-routes'
          content: {
            version: 'KqlItem/1.0'
            title: 'The slowest routes'
            query: loadTextContent('../queries/slowest-routes.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'table'
          }
        }
        {
          type: 3
          name: 'host-requests'
          content: {
            version: 'KqlItem/1.0'
            title: 'Failed invocations as the host saw them, beside the handler\'s line'
            query: loadTextContent('../queries/host-requests.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'table'
          }
        }
        {
          type: 3
          name: 'change-feed-lag'
          content: {
            version: 'KqlItem/1.0'
            title: 'Change-feed lag: age of the oldest change, in seconds'
            query: loadTextContent('../queries/change-feed-lag.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'timechart'
          }
        }
        {
          type: 3
          name: 'deliveries'
          content: {
            version: 'KqlItem/1.0'
            title: 'Change-feed deliveries'
            query: loadTextContent('../queries/deliveries.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'table'
          }
        }
        {
          type: 3
          name: 'dead-letters'
          content: {
            version: 'KqlItem/1.0'
            title: 'Dead letters (`handler dead-letters` lists and replays them)'
            query: loadTextContent('../queries/dead-letters.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'table'
          }
        }
        {
          type: 3
          name: 'failures'
          content: {
            version: 'KqlItem/1.0'
            title: 'Answers 5xx, and Cosmos DB 429s after the SDK\'s retries'
            query: loadTextContent('../queries/failures.kql')
            queryType: 0
            resourceType: 'microsoft.insights/components'
            timeContext: {
              durationMs: day
            }
            visualization: 'barchart'
          }
        }
      ]
      fallbackResourceIds: scopes
      '$schema': 'https://github.com/Microsoft/Application-Insights-Workbooks/blob/master/schema/workbook.json'
    })
  }
}

// Where the alerts go, when an address is given (`azd env set BLOG_ALERT_EMAIL you@example.com`).
resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (!empty(alertEmail)) {
  name: 'blog-operator-${uniqueString(resourceGroup().id)}'
  location: 'global'
  tags: tags
  properties: {
    // At most 12 characters (it names the sender of SMS and voice alerts).
    groupShortName: 'blog-alerts'
    enabled: true
    emailReceivers: [
      {
        name: 'operator'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

var alertActions = {
  actionGroups: empty(alertEmail) ? [] : [
    actionGroup.id
  ]
}

// A change was set aside: a copy is missing somewhere until it is replayed.
resource deadLetterAlert 'Microsoft.Insights/scheduledQueryRules@2022-06-15' = {
  name: 'blog-dead-letters'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Blog: a change was set aside as a dead letter'
    description: 'A change-feed function could not apply a change and set it aside. Run `handler dead-letters` (docs/deploy.md, "Alerts").'
    severity: 2
    enabled: true
    scopes: scopes
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    autoMitigate: false
    criteria: {
      allOf: [
        {
          query: loadTextContent('../queries/alert-dead-letters.kql')
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    actions: alertActions
  }
}

// More than 5 % of the answers in five minutes were 5xx (with at least 20 requests).
resource serverErrorAlert 'Microsoft.Insights/scheduledQueryRules@2022-06-15' = {
  name: 'blog-server-errors'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Blog: more than 5 % of answers are 5xx'
    description: 'The handler answered 5xx to more than 5 % of at least 20 requests in five minutes (docs/deploy.md, "Alerts").'
    severity: 1
    enabled: true
    scopes: scopes
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    autoMitigate: true
    criteria: {
      allOf: [
        {
          query: loadTextContent('../queries/alert-server-errors.kql')
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'failed_percent'
          operator: 'GreaterThan'
          threshold: 5
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    actions: alertActions
  }
}

// The copies are late: a change waited longer than the bound.
resource lagAlert 'Microsoft.Insights/scheduledQueryRules@2022-06-15' = {
  name: 'blog-change-feed-lag'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Blog: the change-feed functions are behind'
    description: 'A change waited more than ${lagAlertSeconds} s to be delivered: the front page and the user pages are that late (docs/deploy.md, "Alerts").'
    severity: 2
    enabled: true
    scopes: scopes
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    autoMitigate: true
    criteria: {
      allOf: [
        {
          query: loadTextContent('../queries/alert-lag.kql')
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'oldest_age_s'
          operator: 'GreaterThan'
          threshold: lagAlertSeconds
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    actions: alertActions
  }
}

// The day's request units are over the budget: the bill is growing faster than planned.
resource budgetAlert 'Microsoft.Insights/scheduledQueryRules@2022-06-15' = {
  name: 'blog-request-unit-budget'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'Blog: request units over the daily budget'
    description: 'The handler\'s requests spent more than ${requestUnitsPerDayBudget} RU in the last 24 hours (docs/deploy.md, "Alerts"; the README\'s cost table).'
    severity: 3
    enabled: true
    scopes: scopes
    evaluationFrequency: 'PT1H'
    windowSize: 'P1D'
    autoMitigate: true
    criteria: {
      allOf: [
        {
          query: loadTextContent('../queries/alert-ru-budget.kql')
          timeAggregation: 'Total'
          metricMeasureColumn: 'ru'
          operator: 'GreaterThan'
          threshold: requestUnitsPerDayBudget
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    actions: alertActions
  }
}

output workbookId string = workbook.id
