// An Azure Front Door (Standard) in front of the function app, deployed only when asked
// (BLOG_FRONT_DOOR=standard; docs/deploy.md, "A CDN in front: Azure Front Door"). It keeps what
// the handler says a shared cache may keep (`Cache-Control: public, max-age=0, s-maxage=5`: an
// anonymous page, feed or API read, for five seconds) and nothing the handler marks `private`,
// `no-cache` or `no-store`; every anonymous view of a popular page within those seconds is then
// answered at the edge instead of by a function execution.
//
// What Front Door does not do, and what this module does about it (Microsoft's "Caching with
// Azure Front Door"):
// - It ignores `Vary`, so it keys a copy by URL (and query string) alone. A signed-in reader
//   asking a URL an anonymous answer was kept under would get that anonymous answer, without
//   their forms, or, worse, an anonymous reader a signed-in page, were the handler ever to mark
//   one public. The rule set below makes a request that carries a sign-in (App Service
//   Authentication's session cookie, the cookie the blog sets on a writer to show them their
//   write, or an Authorization header) bypass the cache: it always reaches the handler, which
//   marks its answer private (src/http/caching.rs).
// - It does not support `stale-while-revalidate`: a copy older than `s-maxage` is revalidated
//   before it is served. The handler's ETags make that revalidation a 304 when nothing changed.
// - It honours `s-maxage` before `max-age`, and does not keep an answer marked `private`,
//   `no-cache` or `no-store`.
//
// Resource shapes follow Microsoft's AVM module avm/res/cdn/profile (API version 2025-04-15) and
// the quickstart "Front Door Standard/Premium with App Service origin"; the vendored types are
// tests/bicep-types/microsoft.cdn@2025-04-15.json. The profile and its endpoint are
// modules/frontdoor-endpoint.bicep's, deployed before the function app (whose BLOG_PUBLIC_URL is
// the endpoint's host name); this module, deployed after it, routes the endpoint to the app.

param profileName string

param endpointName string

@description('The function app\'s default host name: the one origin.')
param originHostName string

resource profile 'Microsoft.Cdn/profiles@2025-04-15' existing = {
  name: profileName
}

resource endpoint 'Microsoft.Cdn/profiles/afdEndpoints@2025-04-15' existing = {
  parent: profile
  name: endpointName
}

resource originGroup 'Microsoft.Cdn/profiles/originGroups@2025-04-15' = {
  parent: profile
  name: 'functionapp'
  properties: {
    loadBalancingSettings: {
      sampleSize: 4
      successfulSamplesRequired: 3
      additionalLatencyInMilliseconds: 50
    }
    // One origin: no probes. A probe would be a function execution every few seconds from each
    // of Front Door's edges, billed, to choose among origins when there is only one.
    sessionAffinityState: 'Disabled'
  }
}

resource origin 'Microsoft.Cdn/profiles/originGroups/origins@2025-04-15' = {
  parent: originGroup
  name: 'functionapp'
  properties: {
    hostName: originHostName
    // The function app answers under its own name only (App Service routes by Host). Front Door
    // sends the host the reader asked for in X-Forwarded-Host, which App Service Authentication
    // builds its redirects from (modules/functionapp.bicep, forwardProxy).
    originHostHeader: originHostName
    httpPort: 80
    httpsPort: 443
    priority: 1
    weight: 1000
    enabledState: 'Enabled'
    enforceCertificateNameCheck: true
  }
}

// The cache's exceptions, evaluated on every request before the cache is looked up: each rule
// whose condition matches turns caching off for the request (a route configuration override with
// no cacheConfiguration is "caching disabled"), so the request is forwarded to the handler.
// Rule names are letters and digits only (the rules engine's naming rule).
resource bypassSignedIn 'Microsoft.Cdn/profiles/ruleSets@2025-04-15' = {
  parent: profile
  name: 'signedin'
}

// App Service Authentication's session cookie: a browser signed in on Azure carries it.
resource sessionCookie 'Microsoft.Cdn/profiles/ruleSets/rules@2025-04-15' = {
  parent: bypassSignedIn
  name: 'sessioncookie'
  properties: {
    order: 1
    conditions: [
      {
        name: 'Cookies'
        parameters: {
          typeName: 'DeliveryRuleCookiesConditionParameters'
          selector: 'AppServiceAuthSession'
          operator: 'Any'
          negateCondition: false
          transforms: []
        }
      }
    ]
    actions: [
      {
        name: 'RouteConfigurationOverride'
        parameters: {
          typeName: 'DeliveryRuleRouteConfigurationOverrideActionParameters'
        }
      }
    ]
    matchProcessingBehavior: 'Stop'
  }
}

// The blog's own cookie: set on a writer for a few seconds after a write, so that the post's
// page is read anew for them (src/http/pages/posts.rs, JUST_WROTE). A signed-in writer carries
// the session cookie too; this rule keeps the promise should sign-in ever not be a cookie.
resource writerCookie 'Microsoft.Cdn/profiles/ruleSets/rules@2025-04-15' = {
  parent: bypassSignedIn
  name: 'writercookie'
  properties: {
    order: 2
    conditions: [
      {
        name: 'Cookies'
        parameters: {
          typeName: 'DeliveryRuleCookiesConditionParameters'
          selector: 'blog_wrote'
          operator: 'Any'
          negateCondition: false
          transforms: []
        }
      }
    ]
    actions: [
      {
        name: 'RouteConfigurationOverride'
        parameters: {
          typeName: 'DeliveryRuleRouteConfigurationOverrideActionParameters'
        }
      }
    ]
    matchProcessingBehavior: 'Stop'
  }
}

// A bearer token: an API client signed in with Entra ID (App Service Authentication validates
// it and sets the caller's headers).
resource authorization 'Microsoft.Cdn/profiles/ruleSets/rules@2025-04-15' = {
  parent: bypassSignedIn
  name: 'authorization'
  properties: {
    order: 3
    conditions: [
      {
        name: 'RequestHeader'
        parameters: {
          typeName: 'DeliveryRuleRequestHeaderConditionParameters'
          selector: 'Authorization'
          operator: 'Any'
          negateCondition: false
          transforms: []
        }
      }
    ]
    actions: [
      {
        name: 'RouteConfigurationOverride'
        parameters: {
          typeName: 'DeliveryRuleRouteConfigurationOverrideActionParameters'
        }
      }
    ]
    matchProcessingBehavior: 'Stop'
  }
}

// App Service Authentication's own pages (/.auth/login, /.auth/me, the sign-in callback): the
// platform's answers, which set and read the session cookie, never kept.
resource platformSignIn 'Microsoft.Cdn/profiles/ruleSets/rules@2025-04-15' = {
  parent: bypassSignedIn
  name: 'platformsignin'
  properties: {
    order: 4
    conditions: [
      {
        name: 'UrlPath'
        parameters: {
          typeName: 'DeliveryRuleUrlPathMatchConditionParameters'
          // The path as the rules engine matches it has no leading slash; both are given.
          operator: 'BeginsWith'
          matchValues: [
            '.auth/'
            '/.auth/'
          ]
          negateCondition: false
          transforms: [
            'Lowercase'
          ]
        }
      }
    ]
    actions: [
      {
        name: 'RouteConfigurationOverride'
        parameters: {
          typeName: 'DeliveryRuleRouteConfigurationOverrideActionParameters'
        }
      }
    ]
    matchProcessingBehavior: 'Stop'
  }
}

resource route 'Microsoft.Cdn/profiles/afdEndpoints/routes@2025-04-15' = {
  parent: endpoint
  name: 'blog'
  properties: {
    originGroup: {
      id: originGroup.id
    }
    ruleSets: [
      {
        id: bypassSignedIn.id
      }
    ]
    supportedProtocols: [
      'Http'
      'Https'
    ]
    patternsToMatch: [
      '/*'
    ]
    forwardingProtocol: 'HttpsOnly'
    linkToDefaultDomain: 'Enabled'
    httpsRedirect: 'Enabled'
    enabledState: 'Enabled'
    cacheConfiguration: {
      // Each query string is its own page (`?continuationToken=`, `?limit=`).
      queryStringCachingBehavior: 'UseQueryString'
      // Front Door compresses what it keeps, for a client that asks; the handler compresses
      // what it answers directly. Compression on Front Door needs caching on (how-to-compression).
      compressionSettings: {
        isCompressionEnabled: true
        contentTypesToCompress: [
          'text/html'
          'text/css'
          'text/plain'
          'application/json'
          'application/atom+xml'
          'application/problem+json'
          'image/svg+xml'
        ]
      }
    }
  }
  // A route to an origin group that has no origin yet is refused.
  dependsOn: [
    origin
    sessionCookie
    writerCookie
    authorization
    platformSignIn
  ]
}
