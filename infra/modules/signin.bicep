// The Entra ID app registration people and API clients sign in to, created in the same
// deployment as the app (Microsoft Graph Bicep extension, see infra/bicepconfig.json). Nothing is
// left to do by hand, and no secret exists anywhere:
// - the web redirect URIs are App Service Authentication's callback on each host the blog is
//   reached at: the function app's, known before it exists (resources.bicep derives it from the
//   app's name), and the Front Door endpoint's when there is one (deployed before this);
// - ID tokens are issued, for App Service Authentication's sign-in (the pages' "Sign in");
// - the API is exposed under an identifier URI of a form Entra ID accepts without a verified
//   domain, `api://<tenantId>/<name>` (msgraph-bicep-types "Known issues": a resource cannot
//   reference its own appId, so `api://<appId>` cannot be set here), with one delegated scope;
// - the Azure CLI is pre-authorized for that scope, so `az account get-access-token --resource
//   <identifier URI>` gets a token without a consent prompt (else AADSTS65001);
// - the credential App Service Authentication redeems sign-in codes with is the function app's
//   user-assigned managed identity, as a federated identity credential (no client secret):
//   "Configure your App Service or Azure Functions app to use Microsoft Entra sign-in", section
//   "Use a managed identity instead of a secret" (learn.microsoft.com), and the sample
//   Azure-Samples/mcp-sdk-functions-hosting-python, infra/app/entra.bicep and infra/app/mcp.bicep.
extension microsoftGraphV1

@description('Unique name of the registration (its alternate key: redeploying updates it instead of creating another).')
param uniqueName string

@description('The name people see when they sign in.')
param displayName string

@description('The host names people sign in at: the function app\'s (e.g. func-blog-xxxx.azurewebsites.net), and the Front Door endpoint\'s when there is one.')
param hostNames array

@description('Principal id of the user-assigned identity App Service Authentication signs in with (used for nothing else): the subject of the federated credential.')
param credentialPrincipalId string

@description('Object id of the user who owns the registration (may update and delete it); empty: none.')
param ownerObjectId string

@description('Object ids of other owners of the registration and its service principal: the GitHub workflow\'s principal, so that CI can update what a person made (docs/deploy.md, "Deploying without a local build").')
param additionalOwnerIds array = []

@description('Client applications pre-authorized for the API\'s scope (no consent prompt): the Azure CLI.')
param preAuthorizedAppIds array

@description('AzureADMyOrg (this tenant) or AzureADMultipleOrgs (any work or school tenant).')
param signInAudience string

@description('The service management reference a tenant\'s app management policy may require; empty: none.')
param serviceManagementReference string

// Microsoft Graph's well-known application id.
var microsoftGraphAppId = '00000003-0000-0000-c000-000000000000'

var identifierUri = 'api://${tenant().tenantId}/${uniqueName}'

// A scope id is a GUID chosen by the registration's author; deterministic, so that a redeployment
// keeps the id the pre-authorization refers to.
var scopeId = guid(tenant().tenantId, uniqueName, 'user_impersonation')

// Owners may update the registration and its service principal; a deployment by anyone else is
// refused. CI's principal holds Application.ReadWrite.OwnedBy, which covers only objects it owns,
// and cannot add owners itself (Graph's "Add owner" reference: OwnedBy "will not be sufficient to
// add another owner"): a person who owns them adds CI's principal here, through
// additionalOwnerIds. 'append' (the extension's default, said here) adds to the owners and
// removes none, so an owner added by hand, or by the other deployer, stays.
var owners = {
  relationshipSemantics: 'append'
  relationships: union(empty(ownerObjectId) ? [] : [ownerObjectId], additionalOwnerIds)
}

resource registration 'Microsoft.Graph/applications@v1.0' = {
  uniqueName: uniqueName
  displayName: displayName
  signInAudience: signInAudience
  serviceManagementReference: empty(serviceManagementReference) ? null : serviceManagementReference
  identifierUris: [
    identifierUri
  ]
  api: {
    // v2.0 access tokens: issuer `<loginEndpoint><tenantId>/v2.0`, the one App Service
    // Authentication is configured with (functionapp.bicep, openIdIssuer); their audience is
    // the application (client) id, also allowed there.
    requestedAccessTokenVersion: 2
    oauth2PermissionScopes: [
      {
        id: scopeId
        value: 'user_impersonation'
        type: 'User'
        isEnabled: true
        adminConsentDisplayName: 'Write to the blog as you'
        adminConsentDescription: 'Lets the application write posts, comments and likes to the blog as the signed-in user.'
        userConsentDisplayName: 'Write to the blog as you'
        userConsentDescription: 'Lets the application write posts, comments and likes to the blog as you.'
      }
    ]
    preAuthorizedApplications: [for appId in preAuthorizedAppIds: {
      appId: appId
      delegatedPermissionIds: [
        scopeId
      ]
    }]
  }
  // What App Service Authentication's sign-in asks of each person: Microsoft Graph's OpenID
  // Connect scopes. Declared, so that where user consent is off an administrator grants them once
  // for everyone ("Grant admin consent", or .../adminconsent?client_id=<clientId>, docs/deploy.md)
  // instead of each first sign-in stopping at "Need admin approval" (AADSTS90094). Declaring
  // grants nothing by itself.
  requiredResourceAccess: [
    {
      resourceAppId: microsoftGraphAppId
      resourceAccess: [
        {
          id: '37f7f235-527c-4136-accd-4a02d197296e' // openid
          type: 'Scope'
        }
        {
          id: '14dad69e-099b-42c9-810b-d002981feec1' // profile
          type: 'Scope'
        }
        {
          id: '64a6cdd6-aab1-4aaf-94b8-3cc8405e90d0' // email
          type: 'Scope'
        }
      ]
    }
  ]
  web: {
    redirectUris: [for hostName in hostNames: 'https://${hostName}/.auth/login/aad/callback']
    implicitGrantSettings: {
      enableIdTokenIssuance: true
      enableAccessTokenIssuance: false
    }
  }
  owners: owners
}

// Sign-in needs the application's service principal in the tenant. Every deployment updates it
// too, and owning the application does not cover it: with Application.ReadWrite.OwnedBy, the
// least privilege Microsoft names for deploying Microsoft.Graph/servicePrincipals
// (learn.microsoft.com/graph/templates/reference/serviceprincipals, "Permissions"), CI may
// update only a service principal it owns, and a later deployment by a principal that is not
// one is refused with Forbidden (msgraph-bicep-types issues 134, 142, 154). So the same owners.
resource servicePrincipal 'Microsoft.Graph/servicePrincipals@v1.0' = {
  appId: registration.appId
  owners: owners
}

// The function app's identity, trusted as the registration's credential. A child resource is
// declared at the top level with the name '<application uniqueName>/<credential name>'
// (msgraph-bicep-types "Known issues").
resource identityCredential 'Microsoft.Graph/applications/federatedIdentityCredentials@v1.0' = {
  name: '${registration.uniqueName}/function-app-identity'
  description: 'The blog\'s function app signs users in with its managed identity instead of a secret.'
  issuer: '${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'
  subject: credentialPrincipalId
  audiences: [
    'api://AzureADTokenExchange'
  ]
}

output clientId string = registration.appId
output identifierUri string = identifierUri
output scope string = '${identifierUri}/user_impersonation'
