//! The pictures' Blob Storage: a private container named as the handler names it, reached with
//! the app's identity, and a memory size the handler takes.

use super::*;

/// The pictures' storage is wired through resources.bicep, modules/storage.bicep (the account,
/// the container, the identity's role) and modules/functionapp.bicep (the settings the handler
/// reads); handed to `check` in that order.
fn pictures_storage(check: impl FnOnce(&[BicepFile], &BicepFile, &BicepFile, &BicepFile)) {
    let files = bicep_files();
    let (main, storage, app) = (
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/storage.bicep"),
        infra_file(&files, "modules/functionapp.bicep"),
    );
    check(&files, main, storage, app);
}

/// The pictures' container exists, private (the handler serves the pictures), named by
/// default as the handler names it.
#[test]
fn the_pictures_have_a_private_container_named_as_the_handler_names_it() {
    pictures_storage(|files, _, storage, _| {
        let containers =
            resources_of_type(files, "Microsoft.Storage/storageAccounts/blobServices/containers");
        let pictures = containers
            .iter()
            .find(|container| expression_at(container, &["name"]) == "picturesContainerName")
            .expect("modules/storage.bicep: a container named picturesContainerName");
        assert_eq!(
            pictures.literal_at(&["properties", "publicAccess"]),
            Some(json!("None")),
            "pictures are served by the handler"
        );
        let parameter = storage
            .statements("parameter_declaration")
            .find(|declaration| {
                first_child_of_kind(*declaration, "identifier")
                    .is_some_and(|id| storage.text(id) == "picturesContainerName")
            })
            .expect("param picturesContainerName");
        assert_eq!(
            expression(storage, *named_children(parameter).last().unwrap()),
            "'pictures'",
            "the handler's default container"
        );
    });
}

/// The app's identity has Storage Blob Data Contributor on the pictures' container, scoped to it.
#[test]
fn the_apps_identity_may_write_only_the_pictures_container() {
    pictures_storage(|_, main, storage, _| {
        let role = storage
            .resources()
            .into_iter()
            .find(|resource| {
                resource.type_name() == "Microsoft.Authorization/roleAssignments"
                    && expression_at(resource, &["scope"]) == "picturesContainer"
            })
            .expect("a role assignment scoped to the pictures' container");
        assert!(
            expression_at(&role, &["properties", "roleDefinitionId"]).contains("pictureRoleId")
        );
        assert_eq!(expression_at(&role, &["properties", "principalId"]), "principalId");
        assert_eq!(
            storage.literal(storage.variable("pictureRoleId").unwrap()),
            Some(json!("ba92f5b4-2d11-453d-a403-e96b0029c9fe")),
            "Storage Blob Data Contributor"
        );
        assert_eq!(
            module_argument(main, "modules/storage.bicep", "principalId"),
            "identity.properties.principalId"
        );
    });
}

/// The app settings the handler reads name the container and the account's blob endpoint,
/// reached with the identity, and give the pictures half the instance's memory on Flex
/// Consumption (a quarter of a dedicated plan's, whose host and extensions run in it too).
#[test]
fn the_app_settings_reach_the_pictures_with_the_identity() {
    pictures_storage(|_, main, storage, app| {
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "picturesBlobEndpoint"),
            "storage.outputs.blobEndpoint"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "picturesContainerName"),
            "storage.outputs.picturesContainerName"
        );
        let outputs = outputs(storage);
        assert_eq!(
            outputs.get("blobEndpoint").map(String::as_str),
            Some("storage.properties.primaryEndpoints.blob")
        );
        let text = &app.source;
        for (setting, value) in [
            ("BLOG_PICTURES__blobServiceUri", "picturesBlobEndpoint"),
            ("BLOG_PICTURES__clientId", "identityClientId"),
            ("BLOG_PICTURES_CONTAINER", "picturesContainerName"),
            (
                "BLOG_PICTURE_MEMORY_MB",
                "string(flex ? instanceMemoryMB / 2 : dedicatedMemoryMB[hostingPlan] / 4)",
            ),
        ] {
            assert!(
                text.contains(&format!("name: '{setting}'\n          value: {value}")),
                "modules/functionapp.bicep: app setting {setting} = {value}"
            );
        }
        assert_eq!(
            blog::PICTURES_SETTING,
            "BLOG_PICTURES",
            "the settings' names are the handler's"
        );
    });
}

/// Every instance size the template allows gives the pictures a memory the handler takes.
#[test]
fn every_instance_size_allowed_gives_the_pictures_a_memory_the_handler_takes() {
    pictures_storage(|_, _, _, app| {
        let sizes =
            parameter_decorators(app, "instanceMemoryMB").expect("instanceMemoryMB is declared");
        let allowed: Vec<u64> = sizes
            .iter()
            .find(|decorator| decorator.starts_with("allowed"))
            .expect("instanceMemoryMB has @allowed")
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|number| number.parse().ok())
            .collect();
        assert!(allowed.contains(&512), "{allowed:?}");
        for megabytes in allowed {
            let memory = (megabytes / 4).to_string();
            let config = blog::Config::from_lookup(|name| {
                (name == "BLOG_PICTURE_MEMORY_MB")
                    .then(|| memory.clone())
                    .or_else(|| (name == "COSMOS_DATABASE").then(|| "blog".into()))
            });
            assert!(config.is_ok(), "instanceMemoryMB {megabytes}: {:?}", config.err());
        }
    });
}
