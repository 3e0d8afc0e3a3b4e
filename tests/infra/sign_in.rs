//! The sign-in's application registration: its redirect, audiences, issuer, scopes, who may call
//! with a token, and the credential it signs in with.

use super::*;

// ---------------------------------------------------------------------------------------------
// Sign-in, the operator, and what the deployment hands on (issue: one command deploys a blog
// people can sign in to)
// ---------------------------------------------------------------------------------------------

/// What Entra ID and App Service Authentication need for the pages' "Sign in" and for API
/// tokens is wired through three files: resources.bicep, modules/signin.bicep (the registration,
/// its credential) and modules/functionapp.bicep (the app's authentication settings,
/// `sites/config`). The tests below check one link each.
pub(crate) struct SignIn<'a> {
    pub(crate) main: &'a BicepFile,
    pub(crate) signin: &'a BicepFile,
    pub(crate) app: &'a BicepFile,
    registration: Resource<'a>,
    pub(crate) auth: Resource<'a>,
}

/// Hands the sign-in's files, parsed, to `check`.
pub(crate) fn sign_in(check: impl FnOnce(&SignIn<'_>)) {
    let files = bicep_files();
    let (main, signin, app) = (
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/signin.bicep"),
        infra_file(&files, "modules/functionapp.bicep"),
    );
    let registration = only_resource(signin, "Microsoft.Graph/applications");
    let auth = only_resource(app, "Microsoft.Web/sites/config");
    check(&SignIn { main, signin, app, registration, auth });
}

/// The tenant's own v2.0 issuer, as Bicep says it.
const V2_ISSUER: &str = "'${environment().authentication.loginEndpoint}${tenant().tenantId}/v2.0'";

/// A web redirect URI is App Service Authentication's callback on each host people sign in at:
/// the app's own host name, and the Front Door endpoint's when there is one; the registration
/// issues ID tokens.
#[test]
fn sign_in_redirects_to_app_service_authentications_callback_on_the_apps_host() {
    sign_in(|SignIn { main, signin, registration, .. }| {
        let redirects =
            registration.file.path(registration.body, &["web", "redirectUris"]).unwrap();
        assert_eq!(
            expression(signin, redirects),
            "[for hostName in hostNames: 'https://${hostName}/.auth/login/aad/callback']",
            "one callback per host"
        );
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "hostNames"),
            "frontDoor ? [appHostName, edge.outputs.hostName] : [appHostName]"
        );
        assert_eq!(
            expression(main, main.variable("appHostName").unwrap()),
            "'${names.functionApp}.azurewebsites.net'"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "appName"),
            "names.functionApp"
        );
        assert_eq!(
            registration.literal_at(&["web", "implicitGrantSettings", "enableIdTokenIssuance"]),
            Some(json!(true))
        );
    });
}

/// The identifier URI, of a form Entra accepts, is an allowed audience; so is the client id,
/// the audience of v2.0 tokens, which are what the registration asks for; the app's client id
/// is the registration's.
#[test]
fn sign_in_audiences_are_the_identifier_uri_and_the_client_id() {
    sign_in(|SignIn { main, signin, registration, auth, .. }| {
        assert_eq!(
            expression(signin, first_item(registration, &["identifierUris"])),
            "'api://${tenant().tenantId}/${uniqueName}'"
        );
        assert_eq!(outputs(signin)["identifierUri"], "'api://${tenant().tenantId}/${uniqueName}'");
        assert_eq!(
            registration.literal_at(&["api", "requestedAccessTokenVersion"]),
            Some(json!(2))
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authAudiences"),
            "filter([signInClientId, signInIdentifierUri], audience => !empty(audience))"
        );
        let main_variable = |name: &str| {
            expression(
                main,
                main.variable(name).unwrap_or_else(|| panic!("resources.bicep: var {name}")),
            )
        };
        assert!(main_variable("signInIdentifierUri").contains("signIn.outputs.identifierUri"));
        assert!(main_variable("signInClientId").contains("signIn.outputs.clientId"));
        assert_eq!(outputs(signin)["clientId"], "registration.appId");
        assert_eq!(
            expression_at(
                auth,
                &[
                    "properties",
                    "identityProviders",
                    "azureActiveDirectory",
                    "validation",
                    "allowedAudiences"
                ]
            ),
            "authAudiences"
        );
        assert_eq!(
            expression_at(
                auth,
                &[
                    "properties",
                    "identityProviders",
                    "azureActiveDirectory",
                    "registration",
                    "clientId"
                ]
            ),
            "authClientId"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authClientId"),
            "createSignIn ? signIn.outputs.clientId : authClientId"
        );
    });
}

/// The issuer is the tenant's own v2.0 one, or `organizations` when other tenants may sign in.
#[test]
fn sign_in_issuer_is_the_tenants_or_organizations_when_other_tenants_may_sign_in() {
    sign_in(|SignIn { main, registration, auth, .. }| {
        assert_eq!(
            expression_at(
                auth,
                &[
                    "properties",
                    "identityProviders",
                    "azureActiveDirectory",
                    "registration",
                    "openIdIssuer"
                ]
            ),
            format!(
                "authMultipleTenants ? '${{environment().authentication.loginEndpoint}}organizations/v2.0' : {V2_ISSUER}"
            )
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authMultipleTenants"),
            "createSignIn && signInAudience == 'AzureADMultipleOrgs'"
        );
        assert_eq!(expression_at(registration, &["signInAudience"]), "signInAudience");
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "signInAudience"),
            "signInAudience"
        );
    });
}

/// The Azure CLI is pre-authorized for the one scope, a delegated one, by the scope's own id.
#[test]
fn sign_in_pre_authorizes_the_azure_cli_for_its_one_scope() {
    sign_in(|SignIn { main, signin, registration, .. }| {
        let scope = first_item(registration, &["api", "oauth2PermissionScopes"]);
        let pre_authorized = registration.file.resolve(
            registration
                .file
                .path(registration.body, &["api", "preAuthorizedApplications"])
                .unwrap(),
        );
        assert_eq!(pre_authorized.kind(), "for_statement", "one pre-authorization per client");
        let pre_authorized = pre_authorized.child_by_field_name("body").unwrap();
        let scope_id = signin.property(scope, "id").map(|id| signin.text(id).to_owned());
        let permitted = signin
            .path(pre_authorized, &["delegatedPermissionIds"])
            .map(|ids| signin.text(named_children(ids)[0]).to_owned());
        assert_eq!(scope_id, permitted, "the pre-authorization names the scope's id");
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "preAuthorizedAppIds"),
            "[ azureCliAppId ]"
        );
        assert_eq!(
            main.literal(main.variable("azureCliAppId").unwrap()),
            Some(json!("04b07795-8ddb-461a-bbee-02f9e1bf7b46"))
        );
        assert_eq!(
            signin.literal(signin.property(scope, "type").unwrap()),
            Some(json!("User")),
            "a delegated scope"
        );
    });
}

/// The sign-in's OpenID Connect scopes are declared, for an administrator's one consent.
#[test]
fn sign_in_declares_the_openid_connect_scopes() {
    sign_in(|SignIn { signin, registration, .. }| {
        let graph = first_item(registration, &["requiredResourceAccess"]);
        assert_eq!(
            signin.literal(signin.property(graph, "resourceAppId").unwrap()),
            Some(json!("00000003-0000-0000-c000-000000000000"))
        );
        assert_eq!(
            signin.literal(signin.property(graph, "resourceAccess").unwrap()),
            Some(json!([
                {"id": "37f7f235-527c-4136-accd-4a02d197296e", "type": "Scope"},
                {"id": "14dad69e-099b-42c9-810b-d002981feec1", "type": "Scope"},
                {"id": "64a6cdd6-aab1-4aaf-94b8-3cc8405e90d0", "type": "Scope"}
            ])),
            "openid, profile, email"
        );
    });
}

/// Only the blog's own sign-in, the Azure CLI and the applications the operator names may
/// call with a token: without the policy, any application of the tenant could.
#[test]
fn only_named_clients_may_call_with_a_token() {
    sign_in(|SignIn { main, auth, .. }| {
        let policy = [
            "properties",
            "identityProviders",
            "azureActiveDirectory",
            "validation",
            "defaultAuthorizationPolicy",
        ];
        assert_eq!(
            expression_at(auth, &[&policy[..], &["allowedApplications"]].concat()),
            "authAllowedApplications"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "authAllowedApplications"),
            "union([signInClientId, azureCliAppId], apiClientApplicationIds, pipelineAppIds)"
        );
        assert_eq!(
            expression(
                main,
                main.variable("pipelineAppIds").expect("resources.bicep: var pipelineAppIds")
            ),
            "!empty(pipelineIdentityId) ? [pipelineIdentity.outputs.clientId] : !empty(pipelineClientId) ? [pipelineClientId] : []",
            "the pipeline's client id, whichever kind of principal azd made"
        );
    });
}

/// The managed identity is the registration's credential (issuer, subject and audience), the
/// registration has a service principal and no client secret.
#[test]
fn sign_in_credential_is_the_managed_identity_not_a_secret() {
    sign_in(|SignIn { main, signin, registration, .. }| {
        let credential =
            only_resource(signin, "Microsoft.Graph/applications/federatedIdentityCredentials");
        assert_eq!(expression_at(&credential, &["issuer"]), V2_ISSUER);
        assert_eq!(expression_at(&credential, &["subject"]), "credentialPrincipalId");
        assert_eq!(
            module_argument(main, "modules/signin.bicep", "credentialPrincipalId"),
            "signInIdentity.properties.principalId"
        );
        assert_eq!(
            credential.literal_at(&["audiences"]),
            Some(json!(["api://AzureADTokenExchange"]))
        );
        assert!(
            expression_at(&credential, &["name"]).starts_with("'${registration.uniqueName}/"),
            "a child is named <app>/<credential>"
        );
        only_resource(signin, "Microsoft.Graph/servicePrincipals");
        assert!(
            registration.file.path(registration.body, &["passwordCredentials"]).is_none(),
            "no client secret"
        );
    });
}

/// `clientSecretSettingName` names an app setting holding the credential identity's client id;
/// the app's own identity's client id is passed apart.
#[test]
fn sign_in_secret_setting_holds_the_credential_identitys_client_id() {
    sign_in(|SignIn { main, app, auth, .. }| {
        let setting = auth.literal_at(&[
            "properties",
            "identityProviders",
            "azureActiveDirectory",
            "registration",
            "clientSecretSettingName",
        ]);
        assert_eq!(setting, Some(json!("OVERRIDE_USE_MI_FIC_ASSERTION_CLIENTID")));
        let site = only_resource(app, "Microsoft.Web/sites");
        let holds_client_id = setting_entries(&site, Hosting::Flex).into_iter().any(|entry| {
            app.property(entry, "name").and_then(|name| app.literal(name)) == setting
                && app.property(entry, "value").map(|value| expression(app, value)).as_deref()
                    == Some("signInIdentityClientId")
        });
        assert!(holds_client_id, "an app setting named {setting:?} holds signInIdentityClientId");
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "signInIdentityClientId"),
            "signInIdentity.properties.clientId"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "identityClientId"),
            "identity.properties.clientId"
        );
    });
}

/// The registration's credential is an identity of its own ("Use a managed identity instead of a
/// secret" asks that it be used for nothing else): assigned to the app beside the app's identity,
/// named by the sign-in setting only, and given no role, so a token it gets opens no data.
#[test]
fn the_sign_in_credential_is_an_identity_used_for_nothing_else() {
    let files = bicep_files();
    let (main, app) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/functionapp.bicep"));
    let mut identities =
        resources_of_type(&files, "Microsoft.ManagedIdentity/userAssignedIdentities");
    identities.retain(|identity| !identity.existing); // the pipeline's, read only
    let symbols: BTreeSet<&str> =
        identities.iter().map(|identity| identity.symbol.as_str()).collect();
    assert_eq!(
        symbols,
        BTreeSet::from(["identity", "signInIdentity"]),
        "two identities: the app's, and the credential"
    );
    let name_of = |symbol: &str| {
        identities
            .iter()
            .find(|identity| identity.symbol == symbol)
            .map(|i| expression_at(i, &["name"]))
    };
    assert_eq!(
        name_of("signInIdentity").as_deref(),
        Some("names.signInIdentity"),
        "a name of its own"
    );
    assert_eq!(name_of("identity").as_deref(), Some("names.identity"));
    let names = main.variable("names").expect("resources.bicep: var names");
    assert!(main.path(names, &["signInIdentity"]).is_some(), "names.signInIdentity is defined");

    let site = only_resource(app, SITE);
    assert_eq!(
        expression_at(&site, &["identity", "userAssignedIdentities"]),
        "{ '${identityId}': {} '${signInIdentityId}': {} }",
        "both identities are the app's"
    );
    assert_eq!(
        module_argument(main, "modules/functionapp.bicep", "signInIdentityId"),
        "signInIdentity.id"
    );

    // Its principal id goes to the federated credential and nowhere else: every role this
    // deployment assigns is given through a module parameter that takes a principal id.
    let mut given_to = Vec::new();
    for module in descendants(main.tree.root_node())
        .into_iter()
        .filter(|node| node.kind() == "module_declaration")
    {
        let path = first_child_of_kind(module, "string")
            .and_then(|path| main.string_literal(path))
            .unwrap_or_default();
        let body = resource_body(module).expect("a module has a body");
        let Some(params) = main.path(body, &["params"]) else { continue };
        for (name, value) in main.object_entries(main.resolve(params)) {
            let name = name.unwrap_or_default();
            if name.to_lowercase().ends_with("principalid")
                && expression(main, value).contains("signInIdentity")
            {
                given_to.push(format!("{path}: {name}"));
            }
        }
    }
    assert_eq!(
        given_to,
        ["modules/signin.bicep: credentialPrincipalId"],
        "the sign-in identity's principal id is the credential's only"
    );
}
