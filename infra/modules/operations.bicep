// What an operator watches: one workbook (requests and request units by route, the slowest
// routes, change-feed lag, dead letters, 5xx and 429s) and three log alerts, on the handler's own
// log lines in Application Insights; and two alerts that do not need the handler to speak: the
// front page fetched from five places (down, crashing or timing out, the handler writes
// nothing), and the account's own request units. The queries are the files in ../queries; each
// reads only fields the handler writes (tests/telemetry.rs holds them to the real lines), and
// docs/deploy.md says what each alert means and what to do.

param location string
param tags object

@description('Resource id of the Application Insights component the Functions host sends the handler\'s lines to.')
param appInsightsId string

@description('Where the alerts are sent; empty: to the subscription\'s Owners (the users given that role on the subscription itself).')
param alertEmail string = ''

@description('The front page\'s address, fetched by the availability test.')
param frontPageUrl string

@description('Resource id of the Cosmos DB account, whose request units the budget alert counts.')
param cosmosAccountId string

@description('How often each of the five places fetches the front page, in seconds (300, 600 or 900). Each run is billed (Azure Monitor pricing, "standard tests"): at 900, about 14,600 runs a month.')
@allowed([
  300
  600
  900
])
param availabilityTestFrequency int = 900

@description('Alert when a change waited longer than this many seconds for the change-feed functions.')
@minValue(30)
param lagAlertSeconds int = 300

@description('Alert when the account spends more request units than this in a day.')
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

// Where every alert goes: the address given (by default the person who deployed, main.bicep),
// else the subscription's Owners, so that an alert always reaches someone. An Azure Resource
// Manager role receiver mails the users assigned the role on the subscription itself, not those
// who inherit it or hold it through a group (Azure Monitor, "Action groups", ARM role).
resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = {
  name: 'blog-operator-${uniqueString(resourceGroup().id)}'
  location: 'global'
  tags: tags
  properties: {
    // At most 12 characters (it names the sender of SMS and voice alerts).
    groupShortName: 'blog-alerts'
    enabled: true
    emailReceivers: empty(alertEmail) ? [] : [
      {
        name: 'operator'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
    armRoleReceivers: !empty(alertEmail) ? [] : [
      {
        name: 'subscription-owners'
        // Built-in role "Owner".
        roleId: '8e3af657-a8ff-443c-a75c-2fe8c4bcb635'
        useCommonAlertSchema: true
      }
    ]
  }
}

var alertActions = {
  actionGroups: [
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
    // The component has no line yet when this is first deployed; Azure validates a log alert's
    // query against the tables it finds and can refuse the rule (azure-resource-manager-schemas
    // issue 567, mspnp/aks-baseline pull request 422).
    skipQueryValidation: true
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
    skipQueryValidation: true
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
    skipQueryValidation: true
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

// The day's request units are over the budget: the bill is growing faster than planned. The
// account's own metric counts every request unit (the change-feed functions', the scripts',
// `handler rebuild-copies`'), not only those the handler's requests log.
resource budgetAlert 'Microsoft.Insights/metricAlerts@2018-03-01' = {
  name: 'blog-request-unit-budget'
  location: 'global'
  tags: tags
  properties: {
    description: 'The Cosmos DB account spent more than ${requestUnitsPerDayBudget} RU in the last 24 hours (docs/deploy.md, "Alerts"; docs/costs.md\'s cost table).'
    severity: 3
    enabled: true
    scopes: [
      cosmosAccountId
    ]
    evaluationFrequency: 'PT1H'
    windowSize: 'P1D'
    autoMitigate: true
    criteria: {
      'odata.type': 'Microsoft.Azure.Monitor.SingleResourceMultipleMetricCriteria'
      allOf: [
        {
          criterionType: 'StaticThresholdCriterion'
          name: 'request-units-per-day'
          metricNamespace: 'Microsoft.DocumentDB/databaseAccounts'
          metricName: 'TotalRequestUnits'
          timeAggregation: 'Total'
          operator: 'GreaterThan'
          threshold: requestUnitsPerDayBudget
        }
      ]
    }
    actions: [
      {
        actionGroupId: actionGroup.id
      }
    ]
  }
}

// The front page, fetched from five places as a reader would: it fails when the host does
// not start, the handler crashes or hangs, or the certificate is about to expire, none of which
// the handler's own lines can tell. A standard test (URL ping tests were retired); it needs the
// hidden-link tag to show under the component.
resource frontPageTest 'Microsoft.Insights/webtests@2022-06-15' = {
  name: 'blog-front-page-${uniqueString(resourceGroup().id)}'
  location: location
  tags: union(tags, {
    'hidden-link:${appInsightsId}': 'Resource'
  })
  kind: 'standard'
  properties: {
    SyntheticMonitorId: 'blog-front-page-${uniqueString(resourceGroup().id)}'
    Name: 'Blog: the front page answers'
    Description: 'GET ${frontPageUrl} answers 200 within 30 s (docs/deploy.md, "Alerts").'
    Enabled: true
    Kind: 'standard'
    Frequency: availabilityTestFrequency
    Timeout: 30
    RetryEnabled: true
    // Five places, the least Microsoft recommends ("Application Insights availability tests"),
    // on three continents (the ids of its "Location population tags").
    Locations: [
      {
        Id: 'us-va-ash-azr' // East US
      }
      {
        Id: 'us-ca-sjc-azr' // West US
      }
      {
        Id: 'emea-nl-ams-azr' // West Europe
      }
      {
        Id: 'emea-gb-db3-azr' // North Europe
      }
      {
        Id: 'apac-sg-sin-azr' // Southeast Asia
      }
    ]
    Request: {
      RequestUrl: frontPageUrl
      HttpVerb: 'GET'
      ParseDependentRequests: false
      FollowRedirects: false
    }
    ValidationRules: {
      ExpectedHttpStatusCode: 200
      SSLCheck: true
      SSLCertRemainingLifetimeCheck: 7
    }
  }
}

// The blog is down: the front page failed from three of the five places (the places less two,
// as Microsoft recommends: one or two alone are a network's trouble, not the blog's), within a
// window that holds a run of each place at the test's largest frequency.
// Written as Microsoft's quickstart writes it (Azure/azure-quickstart-templates,
// quickstarts/microsoft.insights/monitoring-webtest-metric-alert/azuredeploy.json): both ids in
// `scopes`, and the hidden-link tags that show the rule under the component and the test.
resource downAlert 'Microsoft.Insights/metricAlerts@2018-03-01' = {
  name: 'blog-front-page-down'
  location: 'global'
  tags: union(tags, {
    'hidden-link:${appInsightsId}': 'Resource'
    'hidden-link:${frontPageTest.id}': 'Resource'
  })
  properties: {
    description: 'The front page did not answer 200 from three of five places (docs/deploy.md, "Alerts").'
    severity: 0
    enabled: true
    scopes: [
      frontPageTest.id
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    autoMitigate: true
    criteria: {
      'odata.type': 'Microsoft.Azure.Monitor.WebtestLocationAvailabilityCriteria'
      webTestId: frontPageTest.id
      componentId: appInsightsId
      failedLocationCount: 3
    }
    actions: [
      {
        actionGroupId: actionGroup.id
      }
    ]
  }
}

output workbookId string = workbook.id
