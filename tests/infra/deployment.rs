//! What the deployment hands on: the service azd deploys to, the operator's and the pipeline's
//! roles, the outputs the documentation names, and a token key that stays.

use super::*;

/// azd deploys the service to the site with its tag.
#[test]
fn azd_deploys_the_service_to_the_site_its_tag_names() {
    sign_in(|SignIn { app, .. }| {
        let site = only_resource(app, "Microsoft.Web/sites");
        assert!(
            expression_at(&site, &["tags"]).contains("'azd-service-name': 'blog'"),
            "{}",
            expression_at(&site, &["tags"])
        );
    });
}

/// The operator who deploys may run `handler rebuild-copies` and `dead-letters`: the account
/// takes Entra ID only, so they need the data-plane role, given to `deployer().objectId` unless
/// the parameter says otherwise.
#[test]
fn the_operator_gets_the_cosmos_db_data_role() {
    let files = bicep_files();
    let (main, cosmos) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/cosmos.bicep"));
    let parameter = main
        .statements("parameter_declaration")
        .find(|declaration| {
            first_child_of_kind(*declaration, "identifier")
                .is_some_and(|id| main.text(id) == "operatorPrincipalId")
        })
        .expect("resources.bicep: param operatorPrincipalId");
    assert_eq!(expression(main, *named_children(parameter).last().unwrap()), "deployer().objectId");
    assert_eq!(
        module_argument(main, "modules/cosmos.bicep", "operatorPrincipalId"),
        "operatorPrincipalId"
    );
    let assignments: Vec<Resource> = cosmos
        .resources()
        .into_iter()
        .filter(|resource| {
            resource.type_name() == "Microsoft.DocumentDB/databaseAccounts/sqlRoleAssignments"
        })
        .collect();
    let operator = assignments
        .iter()
        .find(|assignment| {
            expression_at(assignment, &["properties", "principalId"]) == "operatorPrincipalId"
        })
        .expect("a role assignment for the operator");
    assert!(
        expression_at(operator, &["properties", "roleDefinitionId"])
            .ends_with("/sqlRoleDefinitions/${dataContributorRoleId}'")
    );
    assert_eq!(
        cosmos.literal(cosmos.variable("dataContributorRoleId").unwrap()),
        Some(json!("00000000-0000-0000-0000-000000000002"))
    );
    assert!(
        cosmos.text(operator.declaration).contains("if (!empty(operatorPrincipalId))"),
        "an empty operator skips it"
    );
}

/// Every output that azure.yaml, its hooks, the README, ARCHITECTURE.md or docs/ name exists in
/// main.bicep: `properties.outputs.<name>` (az deployment group show --query), `${<name>:?…}` in
/// the hooks, and `azd env get-value <name>`.
#[test]
fn every_output_the_documentation_names_exists() {
    let files = bicep_files();
    let declared = outputs(infra_file(&files, "main.bicep"));
    for name in outputs(infra_file(&files, "resources.bicep")).keys() {
        assert_eq!(
            declared.get(name).map(String::as_str),
            Some(format!("blog.outputs.{name}").as_str()),
            "main.bicep passes resources.bicep's output {name} on to azd"
        );
    }
    let root = repo_root();
    let mut documents =
        vec![root.join("README.md"), root.join("ARCHITECTURE.md"), root.join("azure.yaml")];
    documents.extend(files_with_extension(&root.join("docs"), "md"));
    documents.extend(files_with_extension(&root.join("infra/hooks"), "sh"));
    let mut named = 0;
    let mut problems = Vec::new();
    for document in documents {
        let text = fs::read_to_string(&document).unwrap_or_default();
        let mut names = Vec::new();
        for marker in ["properties.outputs.", "azd env get-value ", "${"] {
            for (at, _) in text.match_indices(marker) {
                let name: String = text[at + marker.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let hook_check =
                    marker != "${" || text[at + marker.len() + name.len()..].starts_with(":?");
                if !name.is_empty() && name.starts_with("BLOG_") && hook_check {
                    names.push(name);
                }
            }
        }
        for name in names {
            named += 1;
            if !declared.contains_key(&name) {
                problems.push(format!(
                    "{} names output {name}, which main.bicep does not declare",
                    shown(&document)
                ));
            }
        }
    }
    assert!(named > 0, "the documentation reads the deployment's outputs somewhere");
    assert_no_problems("outputs", &problems);
}

/// The continuation tokens' key stays the same across deployments, from a person's machine and
/// from CI: azd generates it once and keeps it (no `newGuid()`, which made a new key at each
/// deployment and broke every reader's "next page"), and the workflow gives CI the same one.
#[test]
fn the_token_key_changes_only_when_asked() {
    let files = bicep_files();
    let (main, resources) =
        (infra_file(&files, "main.bicep"), infra_file(&files, "resources.bicep"));
    for file in [main, resources] {
        assert!(
            !file.source.contains("newGuid()"),
            "{}: a key made anew at each deployment",
            shown(&file.path)
        );
    }
    let decorators =
        parameter_decorators(main, "tokenSigningKey").expect("main.bicep: param tokenSigningKey");
    assert!(decorators.iter().any(|decorator| decorator == "secure()"), "{decorators:?}");
    assert!(
        decorators.iter().any(|decorator| decorator.contains("type: 'generate'")),
        "azd generates it once: {decorators:?}"
    );
    assert_eq!(
        main.parameters().get("tokenSigningKey"),
        Some(&false),
        "no default: azd's generated value, or the environment's"
    );
    assert_eq!(
        parameter_mappings().get("tokenSigningKey").map(String::as_str),
        Some("BLOG_TOKEN_KEY")
    );
    assert_eq!(module_argument(main, "resources.bicep", "tokenSigningKey"), "tokenSigningKey");
    assert_eq!(
        module_argument(resources, "modules/functionapp.bicep", "tokenSigningKey"),
        "tokenSigningKey"
    );
}

/// CI may update the sign-in registration and its service principal a person made: the person's
/// deployment adds the pipeline's principal as an owner of both, appending, so that neither
/// deployer removes the other; the principal is found on either of `azd pipeline config`'s
/// paths, the managed identity (by the resource id it keeps) taken first as azd takes it, else
/// the service principal (by its client id).
#[test]
fn the_pipelines_principal_owns_the_registration_and_its_service_principal() {
    let files = bicep_files();
    let (main, resources, signin) = (
        infra_file(&files, "main.bicep"),
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/signin.bicep"),
    );
    assert_eq!(
        parameter_mappings().get("pipelineClientId").map(String::as_str),
        Some("AZURE_PIPELINE_CLIENT_ID")
    );
    assert_eq!(
        parameter_mappings().get("pipelineIdentityId").map(String::as_str),
        Some("AZURE_PIPELINE_MSI_CLIENT_ID")
    );
    assert_eq!(module_argument(main, "resources.bicep", "pipelineClientId"), "pipelineClientId");
    assert_eq!(
        module_argument(main, "resources.bicep", "pipelineIdentityId"),
        "pipelineIdentityId"
    );
    assert_eq!(
        module_argument(resources, "modules/pipeline-principal.bicep", "clientId"),
        "pipelineClientId"
    );
    assert_eq!(
        module_argument(resources, "modules/pipeline-identity.bicep", "resourceId"),
        "pipelineIdentityId"
    );
    assert_eq!(
        module_argument(resources, "modules/signin.bicep", "additionalOwnerIds"),
        "!createSignIn ? [] : !empty(pipelineIdentityId) ? [pipelineIdentity.outputs.principalId] : \
         !empty(pipelineClientId) ? [pipelinePrincipal.outputs.objectId] : []"
    );
    let lookup = infra_file(&files, "modules/pipeline-principal.bicep");
    assert!(
        lookup
            .source
            .contains("resource principal 'Microsoft.Graph/servicePrincipals@v1.0' existing = {")
    );
    let identity = only_resource(
        infra_file(&files, "modules/pipeline-identity.bicep"),
        "Microsoft.ManagedIdentity/userAssignedIdentities",
    );
    assert!(identity.existing, "the pipeline's identity is read, not made");
    assert_eq!(expression_at(&identity, &["scope"]), "resourceGroup(parts[2], parts[4])");
    assert_eq!(expression_at(&identity, &["name"]), "parts[8]");

    let owners = signin.variable("owners").expect("signin.bicep: var owners");
    assert_eq!(
        signin.literal(signin.path(owners, &["relationshipSemantics"]).unwrap()),
        Some(json!("append"))
    );
    assert_eq!(
        expression(signin, signin.path(owners, &["relationships"]).unwrap()),
        "union(empty(ownerObjectId) ? [] : [ownerObjectId], additionalOwnerIds)"
    );
    for type_name in ["Microsoft.Graph/applications", "Microsoft.Graph/servicePrincipals"] {
        let owners = expression_at(&only_resource(signin, type_name), &["owners"]);
        assert!(
            owners.contains("relationships: union(empty(ownerObjectId) ? [] : [ownerObjectId], additionalOwnerIds)"),
            "{type_name}: {owners}"
        );
    }
    let workflow = fs::read_to_string(repo_root().join(".github/workflows/azure-dev.yml")).unwrap();
    assert!(
        workflow.contains("Application.ReadWrite.OwnedBy"),
        "the workflow's setup names the Graph permission"
    );
}
