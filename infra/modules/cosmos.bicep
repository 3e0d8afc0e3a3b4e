// Cosmos DB for NoSQL: the article's final ("V3") model. The app's identity gets data-plane
// access only, which cannot create containers or scripts, so everything is created here:
// database, the five containers (the change feed's lease container included) and the article's
// stored procedures and trigger.

param location string
param tags object
param accountName string

@description('true: serverless account. false: provisioned throughput, autoscale on the database.')
param serverless bool

@description('Continuous backup, 7 days (true); false keeps the periodic backup of an account deployed before (docs/deploy.md).')
param continuousBackup bool = true

@description('Autoscale maximum RU/s of the database when not serverless.')
param autoscaleMaxThroughput int

@description('Principal id of the Function App\'s identity.')
param principalId string

@description('Object id of the operator, who runs handler rebuild-copies and dead-letters against the account; empty: nobody.')
param operatorPrincipalId string

// The app's COSMOS_DATABASE.
var databaseName = 'blog'

// Built-in "Cosmos DB Built-in Data Contributor" (data-plane role, not an Azure RBAC role).
var dataContributorRoleId = '00000000-0000-0000-0000-000000000002'

// The indexing policy of users, posts, feed and tags; mirrors `Container::indexing_policy` in
// src/cosmos/mod.rs. Every list sorts by creationDate, then id: an ORDER BY on two properties,
// which Cosmos DB serves only with this composite index (it also serves the fully descending
// order).
var listIndexingPolicy = {
  indexingMode: 'consistent'
  automatic: true
  includedPaths: [
    {
      path: '/*'
    }
  ]
  compositeIndexes: [
    [
      {
        path: '/creationDate'
        order: 'ascending'
      }
      {
        path: '/id'
        order: 'ascending'
      }
    ]
  ]
}

// The lease container is only read by id: the default policy.
var leasesIndexingPolicy = {
  indexingMode: 'consistent'
  automatic: true
  includedPaths: [
    {
      path: '/*'
    }
  ]
}

// The search index's policy: every path but the postings, the bulk of each item, which no
// query filters on (`Container::indexing_policy`); leaving them out makes indexing a post cheaper.
var wordsIndexingPolicy = {
  indexingMode: 'consistent'
  automatic: true
  includedPaths: [
    {
      path: '/*'
    }
  ]
  excludedPaths: [
    {
      path: '/postings/*'
    }
  ]
}

// Point-in-time restore of the last 7 days, at no charge for the backup's storage (the 30-day
// tier is charged per GB): docs/deploy.md, "Restoring from backup". A restore makes a new account.
var continuousBackupPolicy = {
  type: 'Continuous'
  continuousModeProperties: {
    tier: 'Continuous7Days'
  }
}

// Azure's default for an account created without a backup policy, which accounts deployed
// before continuous backup was declared here have. Moving one to continuous is one-way, and
// Azure refuses it in the same update as any other change (Azure/bicep-types-az issues 1940
// and 2315): docs/deploy.md says how, and how to keep periodic backup meanwhile.
var periodicBackupPolicy = {
  type: 'Periodic'
  periodicModeProperties: {
    backupIntervalInMinutes: 240
    backupRetentionIntervalInHours: 8
    backupStorageRedundancy: 'Geo'
  }
}

// The account: Entra ID only (no keys), session consistency, one region.
resource account 'Microsoft.DocumentDB/databaseAccounts@2025-04-15' = {
  name: accountName
  location: location
  tags: tags
  kind: 'GlobalDocumentDB'
  properties: {
    databaseAccountOfferType: 'Standard'
    locations: [
      {
        locationName: location
        failoverPriority: 0
        isZoneRedundant: false
      }
    ]
    consistencyPolicy: {
      defaultConsistencyLevel: 'Session'
    }
    capabilities: serverless ? [
      {
        name: 'EnableServerless'
      }
    ] : []
    disableLocalAuth: true
    // Said, not left to the default: an account restored from backup is made with public access
    // as the restore was asked (docs/deploy.md restores it closed), and this template, applied to
    // it, opens it to the app, which reaches it by its public endpoint with Entra ID.
    publicNetworkAccess: 'Enabled'
    backupPolicy: continuousBackup ? continuousBackupPolicy : periodicBackupPolicy
    // Containers and scripts change through Azure Resource Manager (this template) only.
    disableKeyBasedMetadataWriteAccess: true
    minimalTlsVersion: 'Tls12'
  }
}

// The database; with provisioned throughput it holds the autoscale RU/s its containers share.
resource database 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases@2025-04-15' = {
  parent: account
  name: databaseName
  properties: {
    resource: {
      id: databaseName
    }
    options: serverless ? {} : {
      autoscaleSettings: {
        maxThroughput: autoscaleMaxThroughput
      }
    }
  }
}

// A user and the short copies of their posts (Q1, Q3), one partition per user.
resource users 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2025-04-15' = {
  parent: database
  name: 'users'
  properties: {
    resource: {
      id: 'users'
      partitionKey: {
        paths: [
          '/userId'
        ]
        kind: 'Hash'
        version: 2
      }
      indexingPolicy: listIndexingPolicy
      // On, with no default: the records of idempotency keys expire a day after their write.
      defaultTtl: -1
    }
  }
}

// A post with its comments and likes, one partition per post (Q2, Q4, Q5). Time to live is on
// with no default (-1): only a deleted post's tombstone carries a ttl (C7, deletePost.js), so that
// the change feed delivers the deletion before Cosmos DB removes the item.
resource posts 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2025-04-15' = {
  parent: database
  name: 'posts'
  properties: {
    resource: {
      id: 'posts'
      partitionKey: {
        paths: [
          '/postId'
        ]
        kind: 'Hash'
        version: 2
      }
      indexingPolicy: listIndexingPolicy
      defaultTtl: -1
    }
  }
}

// Short copies of the newest 100 posts, all in the partition "post" (Q6).
resource feed 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2025-04-15' = {
  parent: database
  name: 'feed'
  properties: {
    resource: {
      id: 'feed'
      partitionKey: {
        paths: [
          '/type'
        ]
        kind: 'Hash'
        version: 2
      }
      indexingPolicy: listIndexingPolicy
    }
  }
}

// A short copy of each tagged post under each of its tags, one partition per tag in its normal
// form (Q7: the newest posts with a tag, one query on one partition); kept by PostsChangeFeed.
resource tagCopies 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2025-04-15' = {
  parent: database
  name: 'tags'
  properties: {
    resource: {
      id: 'tags'
      partitionKey: {
        paths: [
          '/tag'
        ]
        kind: 'Hash'
        version: 2
      }
      indexingPolicy: listIndexingPolicy
    }
  }
}

// The change-feed functions' positions; the trigger must not create it (the data-plane role
// cannot).
resource words 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2025-04-15' = {
  parent: database
  name: 'words'
  properties: {
    resource: {
      id: 'words'
      partitionKey: {
        paths: [
          '/word'
        ]
        kind: 'Hash'
        version: 2
      }
      indexingPolicy: wordsIndexingPolicy
    }
  }
}

resource leases 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers@2025-04-15' = {
  parent: database
  name: 'leases'
  properties: {
    resource: {
      id: 'leases'
      partitionKey: {
        paths: [
          '/id'
        ]
        kind: 'Hash'
        version: 2
      }
      indexingPolicy: leasesIndexingPolicy
    }
  }
}

// The keyed procedures (C3 to C7) share their helpers, src/scripts/keyed_helpers.js: each body is
// the procedure's file with them inside its function, in place of its line "keyed_helpers.js";, as
// Cosmos DB registers a body as one function (why, and the same join for the in-process engine:
// src/scripts/mod.rs, KEYED_HELPERS; tests/infra/cosmos.rs checks that the two are the same bytes).

// C3: create a comment and increment the post's commentCount in one transaction.
resource createComment 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures@2025-04-15' = {
  parent: posts
  name: 'createComment'
  properties: {
    resource: {
      id: 'createComment'
      body: replace(loadTextContent('../../src/scripts/createComment.js'), '"keyed_helpers.js";', loadTextContent('../../src/scripts/keyed_helpers.js'))
    }
  }
}

// C4: create a like and increment the post's likeCount in one transaction.
resource createLike 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures@2025-04-15' = {
  parent: posts
  name: 'createLike'
  properties: {
    resource: {
      id: 'createLike'
      body: replace(loadTextContent('../../src/scripts/createLike.js'), '"keyed_helpers.js";', loadTextContent('../../src/scripts/keyed_helpers.js'))
    }
  }
}

// A username change, pushed into one post partition's items (run once per partition).
resource updateUsernames 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures@2025-04-15' = {
  parent: posts
  name: 'updateUsernames'
  properties: {
    resource: {
      id: 'updateUsernames'
      body: loadTextContent('../../src/scripts/updateUsernames.js')
    }
  }
}

// C5: delete a like and decrement the post's likeCount in one transaction.
resource deleteLike 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures@2025-04-15' = {
  parent: posts
  name: 'deleteLike'
  properties: {
    resource: {
      id: 'deleteLike'
      body: replace(loadTextContent('../../src/scripts/deleteLike.js'), '"keyed_helpers.js";', loadTextContent('../../src/scripts/keyed_helpers.js'))
    }
  }
}

// C6: delete a comment and decrement the post's commentCount in one transaction.
resource deleteComment 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures@2025-04-15' = {
  parent: posts
  name: 'deleteComment'
  properties: {
    resource: {
      id: 'deleteComment'
      body: replace(loadTextContent('../../src/scripts/deleteComment.js'), '"keyed_helpers.js";', loadTextContent('../../src/scripts/keyed_helpers.js'))
    }
  }
}

// C7: make a post a tombstone, then delete its comments and likes in bounded pieces.
resource deletePost 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/storedProcedures@2025-04-15' = {
  parent: posts
  name: 'deletePost'
  properties: {
    resource: {
      id: 'deletePost'
      body: replace(loadTextContent('../../src/scripts/deletePost.js'), '"keyed_helpers.js";', loadTextContent('../../src/scripts/keyed_helpers.js'))
    }
  }
}

// Keeps the feed at its newest 100 posts; runs when a write names it as post-trigger.
resource truncateFeed 'Microsoft.DocumentDB/databaseAccounts/sqlDatabases/containers/triggers@2025-04-15' = {
  parent: feed
  name: 'truncateFeed'
  properties: {
    resource: {
      id: 'truncateFeed'
      triggerType: 'Post'
      triggerOperation: 'All'
      body: loadTextContent('../../src/scripts/truncateFeed.js')
    }
  }
}

// The app's data-plane access: read and write items, run the scripts, read the change feed.
resource dataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2025-04-15' = {
  parent: account
  name: guid(account.id, principalId, dataContributorRoleId)
  properties: {
    roleDefinitionId: '${account.id}/sqlRoleDefinitions/${dataContributorRoleId}'
    scope: account.id
    principalId: principalId
  }
}

// The operator's data-plane access: keys are disabled (disableLocalAuth), so `handler
// rebuild-copies` and `handler dead-letters` run with the operator's own Entra ID sign-in
// (az login), which needs this role on the account.
resource operatorDataContributor 'Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments@2025-04-15' = if (!empty(operatorPrincipalId)) {
  parent: account
  name: guid(account.id, operatorPrincipalId, dataContributorRoleId)
  properties: {
    roleDefinitionId: '${account.id}/sqlRoleDefinitions/${dataContributorRoleId}'
    scope: account.id
    principalId: operatorPrincipalId
  }
}

output endpoint string = account.properties.documentEndpoint
output databaseName string = database.name
// The account's own metrics (the request-unit budget alert, modules/operations.bicep).
output accountId string = account.id
