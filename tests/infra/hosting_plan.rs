//! The function app's hosting: identity-based settings, publishing without passwords, what
//! Flex Consumption refuses or a dedicated plan needs, and the regions that offer it.

use super::*;

/// FTP and the SCM site's user names and passwords are off: both policies, `allow: false`, and
/// each with the `location` Azure requires of them (see [`KNOWN_TYPE_INACCURACIES`]).
#[test]
fn publishing_with_passwords_is_off() {
    let files = bicep_files();
    let policies =
        resources_of_type(&files, "Microsoft.Web/sites/basicPublishingCredentialsPolicies");
    let mut problems = Vec::new();
    for name in ["scm", "ftp"] {
        let Some(policy) =
            policies.iter().find(|policy| policy.literal_at(&["name"]) == Some(json!(name)))
        else {
            problems.push(format!("no basicPublishingCredentialsPolicies '{name}'"));
            continue;
        };
        if policy.literal_at(&["properties", "allow"]) != Some(json!(false)) {
            problems.push(format!("{}: properties.allow must be false", policy.at()));
        }
        match policy.file.property(policy.body, "location") {
            Some(location) if expression(policy.file, location) == "location" => {}
            other => problems.push(format!(
                "{}: location must be the app's (the module's `location`), found {:?}",
                policy.at(),
                other.map(|node| expression(policy.file, node))
            )),
        }
    }
    assert_no_problems("publishing credentials policies", &problems);
}

/// The settings the handler (src/config.rs) and the Functions host read, with identity-based
/// connections; and none of FUNCTIONS_WORKER_RUNTIME, which Flex Consumption refuses.
#[test]
fn function_app_settings_are_identity_based() {
    let files = bicep_files();
    let sites = resources_of_type(&files, SITE);
    assert_eq!(sites.len(), 1, "one Function App expected in infra/");
    let site = &sites[0];
    let mut problems = Vec::new();
    for plan in [Hosting::Flex, Hosting::Dedicated] {
        identity_based_settings(site, plan, &mut problems);
    }
    let runtime = site.file.path_on(
        site.body,
        &["properties", "functionAppConfig", "runtime"],
        Hosting::Flex,
    );
    if runtime.and_then(|runtime| site.file.literal(runtime))
        != Some(json!({"name": "custom", "version": "1.0"}))
    {
        problems.push(format!("{}: functionAppConfig.runtime must be custom 1.0", site.at()));
    }
    assert_no_problems("Function App settings", &problems);
}

/// The problems of the app settings on `plan`, for [`function_app_settings_are_identity_based`].
fn identity_based_settings(site: &Resource, plan: Hosting, problems: &mut Vec<String>) {
    let settings = literal_settings(site, plan);
    let required = [
        "AzureWebJobsStorage__accountName",
        "AzureWebJobsStorage__clientId",
        "CosmosDB__accountEndpoint",
        "CosmosDB__clientId",
        "COSMOS_DATABASE",
        // The pictures in posts, in Blob Storage with the identity.
        "BLOG_PICTURES__blobServiceUri",
        "BLOG_PICTURES__clientId",
        "BLOG_PICTURES_CONTAINER",
        // The pictures' memory, from the instance's.
        "BLOG_PICTURE_MEMORY_MB",
        "BLOG_TOKEN_KEY",
        // The address every absolute link of the pages and feeds names.
        "BLOG_PUBLIC_URL",
        "APPLICATIONINSIGHTS_CONNECTION_STRING",
        "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
        // The front page is served at the root, in place of the host's home page.
        "AzureWebJobsDisableHomepage",
    ];
    for name in required.iter().filter(|name| !settings.contains_key(**name)) {
        problems.push(format!("{} ({plan:?}): app setting {name} is missing", site.at()));
    }
    for name in ["AzureWebJobsStorage__credential", "CosmosDB__credential"] {
        if settings.get(name) != Some(&Some("managedidentity".to_string())) {
            problems.push(format!(
                "{} ({plan:?}): app setting {name} must be 'managedidentity'",
                site.at()
            ));
        }
    }
    for forbidden in ["AzureWebJobsStorage", "CosmosDB", "BLOG_PICTURES"] {
        if settings.contains_key(forbidden) {
            problems.push(format!(
                "{} ({plan:?}): app setting {forbidden} must not be set (no secrets)",
                site.at()
            ));
        }
    }
}

/// What Flex Consumption refuses is absent: `siteConfig` holds only what the plan takes
/// (`ftpsState` is refused with ARM error 51021; the runtime and its versions live in
/// `functionAppConfig`), no app setting of Microsoft's list of Flex Consumption deprecations
/// (learn.microsoft.com/azure/azure-functions/functions-app-settings, "Flex Consumption plan
/// deprecations"), and `maximumInstanceCount` is bounded as the plan bounds it, 40 to 1000.
#[test]
fn nothing_flex_consumption_refuses() {
    let files = bicep_files();
    let sites = resources_of_type(&files, SITE);
    let site = &sites[0];
    let mut problems = Vec::new();
    let site_config = site.file.path_on(site.body, &["properties", "siteConfig"], Hosting::Flex);
    let allowed = ["appSettings", "minTlsVersion", "cors", "http20Enabled"];
    for (key, value) in
        site_config.map(|object| site.file.object_entries(object)).unwrap_or_default()
    {
        let key = key.unwrap_or_default();
        // `flex ? null : …`: left out on Flex Consumption.
        let absent = site.file.on_plan(value, Hosting::Flex).kind() == "null";
        if !allowed.contains(&key.as_str()) && !absent {
            problems.push(format!(
                "{}: siteConfig.{key} is not taken on Flex Consumption (allowed here: {allowed:?})",
                site.at()
            ));
        }
    }
    let deprecated = [
        "FUNCTIONS_EXTENSION_VERSION",
        "FUNCTIONS_WORKER_RUNTIME",
        "FUNCTIONS_WORKER_RUNTIME_VERSION",
        "FUNCTIONS_MAX_HTTP_CONCURRENCY",
        "FUNCTIONS_WORKER_PROCESS_COUNT",
        "FUNCTIONS_WORKER_DYNAMIC_CONCURRENCY_ENABLED",
        "SCM_DO_BUILD_DURING_DEPLOYMENT",
        "WEBSITE_CONTENTAZUREFILECONNECTIONSTRING",
        "WEBSITE_CONTENTOVERVNET",
        "WEBSITE_CONTENTSHARE",
        "WEBSITE_MAX_DYNAMIC_APPLICATION_SCALE_OUT",
        "WEBSITE_NODE_DEFAULT_VERSION",
        "WEBSITE_RUN_FROM_PACKAGE",
        "WEBSITE_SKIP_CONTENTSHARE_VALIDATION",
        "WEBSITE_VNET_ROUTE_ALL",
    ];
    for setting in setting_entries(site, Hosting::Flex) {
        let name = site.file.property(setting, "name").and_then(|name| site.file.literal(name));
        if let Some(Value::String(name)) = name
            && deprecated.contains(&name.as_str())
        {
            problems
                .push(format!("{}: app setting {name} is refused on Flex Consumption", site.at()));
        }
    }
    for file in &files {
        let Some(decorators) = parameter_decorators(file, "maximumInstanceCount") else { continue };
        for bound in ["minValue(40)", "maxValue(1000)"] {
            if !decorators.iter().any(|decorator| decorator == bound) {
                problems.push(format!(
                    "{}: param maximumInstanceCount needs @{bound} (found {decorators:?})",
                    shown(&file.path)
                ));
            }
        }
    }
    assert_no_problems("Flex Consumption", &problems);
}

/// On a dedicated plan (`hostingPlan` other than `flex`) the app has what Flex Consumption takes
/// from `functionAppConfig` and refuses elsewhere: the host's version and the custom runtime as
/// app settings, the package run as azd's zip deploy leaves it, Always On (an idle app on a
/// dedicated plan is woken by HTTP alone, and the change-feed functions would stop), an empty
/// `linuxFxVersion` (Microsoft's stack data for a custom handler on Linux); no
/// `functionAppConfig`. The plan is Linux, one instance of the size asked for. The sizes offered
/// are the same in every file, and `handler cost --hosting-plan` prices each of them.
#[test]
fn a_dedicated_plan_has_what_flex_consumption_takes_elsewhere() {
    let files = bicep_files();
    let app_file = infra_file(&files, "modules/functionapp.bicep");
    let site = only_resource(app_file, SITE);
    let settings = literal_settings(&site, Hosting::Dedicated);
    for (name, value) in [
        ("FUNCTIONS_EXTENSION_VERSION", "~4"),
        ("FUNCTIONS_WORKER_RUNTIME", "custom"),
        ("WEBSITE_RUN_FROM_PACKAGE", "1"),
    ] {
        assert_eq!(settings.get(name), Some(&Some(value.to_owned())), "{name} on a dedicated plan");
    }
    let dedicated = |path: &[&str]| {
        site.file
            .path_on(site.body, path, Hosting::Dedicated)
            .and_then(|node| site.file.literal(node))
    };
    assert_eq!(dedicated(&["properties", "siteConfig", "alwaysOn"]), Some(json!(true)));
    assert_eq!(dedicated(&["properties", "siteConfig", "linuxFxVersion"]), Some(json!("")));
    assert_eq!(dedicated(&["properties", "functionAppConfig"]), Some(Value::Null));
    let plan = only_resource(app_file, "Microsoft.Web/serverfarms");
    let on = |path: &[&str], hosting| {
        plan.file.path_on(plan.body, path, hosting).map(|node| expression(plan.file, node))
    };
    assert_eq!(on(&["kind"], Hosting::Dedicated).as_deref(), Some("'linux'"));
    assert_eq!(on(&["sku", "name"], Hosting::Dedicated).as_deref(), Some("hostingPlan"));
    assert_eq!(on(&["sku", "capacity"], Hosting::Dedicated).as_deref(), Some("1"));
    assert_eq!(on(&["sku", "tier"], Hosting::Flex).as_deref(), Some("'FlexConsumption'"));
    assert_eq!(plan.literal_at(&["properties", "reserved"]), Some(json!(true)), "Linux");

    let mut offered = Vec::new();
    for file in ["main.bicep", "resources.bicep", "modules/functionapp.bicep"] {
        let decorators = parameter_decorators(infra_file(&files, file), "hostingPlan")
            .expect("hostingPlan is declared");
        let allowed = decorators
            .iter()
            .find(|decorator| decorator.starts_with("allowed"))
            .expect("hostingPlan has @allowed");
        let sizes: Vec<String> =
            allowed.split('\'').skip(1).step_by(2).map(str::to_owned).collect();
        offered.push((file, sizes));
    }
    assert!(
        offered.iter().all(|(_, sizes)| sizes == &offered[0].1),
        "the same sizes everywhere: {offered:?}"
    );
    assert_eq!(
        parameter_mappings().get("hostingPlan").map(String::as_str),
        Some("BLOG_HOSTING_PLAN")
    );
    for size in &offered[0].1 {
        let priced = std::process::Command::new(env!("CARGO_BIN_EXE_handler"))
            .args(["cost", "--views-per-day", "1000", "--hosting-plan", size])
            .output()
            .expect("handler runs");
        assert!(
            priced.status.success(),
            "handler cost --hosting-plan {size}: {}",
            String::from_utf8_lossy(&priced.stderr)
        );
    }
}

/// The regions where Flex Consumption is offered, as Microsoft's azd samples for the plan allow
/// them (Azure-Samples/functions-quickstart-dotnet-azd, infra/main.bicep at 9633052, 2026-02-21;
/// the same list in mcp-sdk-functions-hosting-python at 42f632c), without the canary region
/// eastus2euap that ordinary subscriptions cannot use. `az functionapp
/// list-flexconsumption-locations` gives today's list.
const FLEX_CONSUMPTION_REGIONS: [&str; 31] = [
    "australiaeast",
    "australiasoutheast",
    "brazilsouth",
    "canadacentral",
    "centralindia",
    "centralus",
    "eastasia",
    "eastus",
    "eastus2",
    "francecentral",
    "germanywestcentral",
    "italynorth",
    "japaneast",
    "koreacentral",
    "northcentralus",
    "northeurope",
    "norwayeast",
    "southafricanorth",
    "southcentralus",
    "southeastasia",
    "southindia",
    "spaincentral",
    "swedencentral",
    "uaenorth",
    "uksouth",
    "ukwest",
    "westcentralus",
    "westeurope",
    "westus",
    "westus2",
    "westus3",
];

/// `location` takes only a Flex Consumption region: anywhere else the deployment would fail at
/// the plan, after the account and the app registration were already made.
#[test]
fn location_is_a_flex_consumption_region() {
    let files = bicep_files();
    let (main, resources) =
        (infra_file(&files, "main.bicep"), infra_file(&files, "resources.bicep"));
    let decorators = parameter_decorators(main, "location").expect("main.bicep: param location");
    let allowed = decorators
        .iter()
        .find(|decorator| decorator.starts_with("allowed("))
        .expect("param location has @allowed");
    let regions: Vec<String> = allowed
        .trim_start_matches("allowed(")
        .trim_end_matches(')')
        .split_whitespace()
        .filter(|word| word.starts_with('\''))
        .map(|word| word.trim_matches('\'').to_owned())
        .collect();
    assert_eq!(
        regions, FLEX_CONSUMPTION_REGIONS,
        "the allowed regions are the Flex Consumption list"
    );
    assert!(
        decorators.iter().any(|decorator| decorator.contains("type: 'location'")),
        "azd's location prompt: {decorators:?}"
    );
    for module in [
        "modules/functionapp.bicep",
        "modules/cosmos.bicep",
        "modules/storage.bicep",
        "modules/monitoring.bicep",
    ] {
        assert_eq!(
            module_argument(resources, module, "location"),
            "location",
            "{module} is deployed in the guarded region"
        );
    }
    assert_eq!(module_argument(main, "resources.bicep", "location"), "location");
    // azd filters its region prompt by @allowed only for a subscription-scoped template deployed
    // with a parameters file whose `location` is AZURE_LOCATION and has no default (azure-dev
    // bicep_provider.go: EnsureEnv, ensureParameters, locationParameterFilterImpl); and a region
    // refused there stops the deployment before the resource group, part of it, exists.
    assert!(
        main.source.contains("targetScope = 'subscription'"),
        "main.bicep is subscription-scoped"
    );
    assert_eq!(
        main.parameters().get("location"),
        Some(&false),
        "location has no default: azd asks for it"
    );
    assert_eq!(parameter_mappings().get("location").map(String::as_str), Some("AZURE_LOCATION"));
    let group = only_resource(main, "Microsoft.Resources/resourceGroups");
    assert_eq!(
        expression_at(&group, &["location"]),
        "location",
        "the group is made in the guarded region"
    );
    assert!(
        main.source.contains("module blog 'resources.bicep' = {")
            && main.source.contains("scope: group"),
        "everything else is deployed into that group"
    );
}
