//! The operations: Application Insights, the workbook, the alerts and whom they reach, the
//! availability test, the request unit budget and the logs' daily cap.

use super::*;

/// The operator's workbook and alerts. Every query the workbook shows is a file of
/// `infra/queries` (where `tests/telemetry.rs` holds each one to the handler's real lines), the
/// workbook and the alerts read the Application Insights component the host writes to, each
/// alert's measure is a column its query makes, and alerts go to an address only when one is
/// given. The alerts' operators avoid `Equals`, which the type definitions offer and the service
/// refuses (it wants `Equal`: Azure/bicep-types-az issues 2308 and 2643, open). The tests below
/// check one of these each, on the files handed to `check`: all, resources.bicep and
/// modules/operations.bicep.
fn operations(check: impl FnOnce(&[BicepFile], &BicepFile, &BicepFile)) {
    let files = bicep_files();
    let (main, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    check(&files, main, operations);
}

/// The operations read the Application Insights component the host writes to, and alert the
/// address given, or the deployer's.
#[test]
fn the_operations_read_the_hosts_application_insights() {
    operations(|files, main, _| {
        assert_eq!(
            module_argument(main, "modules/operations.bicep", "appInsightsId"),
            "monitoring.outputs.appInsightsId"
        );
        assert_eq!(
            outputs(infra_file(files, "modules/monitoring.bicep"))
                .get("appInsightsId")
                .map(String::as_str),
            Some("appInsights.id")
        );
        assert_eq!(
            module_argument(main, "modules/operations.bicep", "alertEmail"),
            "empty(alertEmail) ? deployerMailbox : alertEmail"
        );
        assert_eq!(
            parameter_mappings().get("alertEmail").map(String::as_str),
            Some("BLOG_ALERT_EMAIL")
        );
    });
}

/// The workbook, shared and named the same each deployment, shows every query file of
/// `infra/queries` that is no alert's; every query file is shown or alerted on.
#[test]
fn the_workbook_shows_every_query_of_infra_queries() {
    operations(|_, _, operations| {
        let workbook = only_resource(operations, "Microsoft.Insights/workbooks");
        assert_eq!(workbook.literal_at(&["kind"]), Some(json!("shared")));
        assert!(
            expression_at(&workbook, &["name"]).starts_with("guid("),
            "a workbook's name is a GUID, the same each deployment"
        );
        assert_eq!(expression_at(&workbook, &["properties", "sourceId"]), "appInsightsId");
        let loaded: BTreeSet<String> =
            load_text_content_calls(operations).into_iter().map(|(_, target)| target).collect();
        let queries: BTreeSet<String> =
            files_with_extension(&repo_root().join("infra/queries"), "kql")
                .iter()
                .map(|path| format!("../queries/{}", path.file_name().unwrap().to_string_lossy()))
                .collect();
        assert_eq!(loaded, queries, "every query file is shown or alerted on, and only those");
        let serialized = expression_at(&workbook, &["properties", "serializedData"]);
        for query in queries.iter().filter(|query| !query.contains("/alert-")) {
            assert!(
                serialized.contains(&format!("loadTextContent('{query}')")),
                "the workbook shows {query}"
            );
        }
    });
}

/// Each alert is a log alert on the component, to the action group, on a query file of
/// `infra/queries` that neither bins nor dates its rows, with an operator the service takes and
/// a measure its query makes.
#[test]
fn each_alert_is_a_log_alert_on_a_query_file_with_a_measure_it_makes() {
    operations(|files, _, operations| {
        let alerts = resources_of_type(files, "Microsoft.Insights/scheduledQueryRules");
        assert_eq!(alerts.len(), 3, "dead letters, 5xx, lag");
        for alert in &alerts {
            assert_eq!(alert.literal_at(&["kind"]), Some(json!("LogAlert")), "{}", alert.at());
            assert_eq!(
                expression_at(alert, &["properties", "scopes"]),
                "[ appInsightsId ]",
                "{}",
                alert.at()
            );
            assert_eq!(
                expression_at(alert, &["properties", "actions"]),
                "{ actionGroups: [ actionGroup.id ] }",
                "{}",
                alert.at()
            );
            // The component has no line yet at the first deployment, and a query over a table that
            // does not exist yet fails Azure's validation of the rule (azure-resource-manager-schemas
            // issue 567; mspnp/aks-baseline pull request 422).
            assert_eq!(
                alert.literal_at(&["properties", "skipQueryValidation"]),
                Some(json!(true)),
                "{}",
                alert.at()
            );
            let condition = first_item(alert, &["properties", "criteria", "allOf"]);
            let field = |name: &str| {
                operations.path(condition, &[name]).map(|node| expression(operations, node))
            };
            let query = field("query").unwrap_or_default();
            let file = query
                .strip_prefix("loadTextContent('")
                .and_then(|rest| rest.strip_suffix("')"))
                .unwrap_or_else(|| {
                    panic!("{}: the query is a file of infra/queries: {query}", alert.at())
                });
            let text = fs::read_to_string(repo_root().join("infra/modules").join(file)).unwrap();
            // The rule keeps the rows of its window itself; bins by the clock would cut a sliding
            // window in two halves judged apart (Azure Monitor, "Create a log search alert rule").
            let code: String =
                text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
            assert!(
                !code.contains("bin(") && !code.contains("ago("),
                "{}: {file} bins or dates its rows",
                alert.at()
            );
            let operator = field("operator").unwrap_or_default();
            assert!(
                [
                    "'GreaterThan'",
                    "'GreaterThanOrEqual'",
                    "'LessThan'",
                    "'LessThanOrEqual'",
                    "'Equal'"
                ]
                .contains(&operator.as_str()),
                "{}: operator {operator}",
                alert.at()
            );
            if let Some(column) = field("metricMeasureColumn") {
                let column = column.trim_matches('\'');
                assert!(
                    text.contains(&format!("{column} =")) || text.contains(&format!(", {column}")),
                    "{}: the query {file} makes no column {column}",
                    alert.at()
                );
            }
        }
    });
}

/// The action group is global, with a short name Azure takes.
#[test]
fn the_alerts_action_group_is_global_with_a_short_name_azure_takes() {
    operations(|_, _, operations| {
        let group = only_resource(operations, "Microsoft.Insights/actionGroups");
        assert_eq!(group.literal_at(&["location"]), Some(json!("global")));
        let short = group.literal_at(&["properties", "groupShortName"]).unwrap();
        assert!(
            short.as_str().unwrap().len() <= 12,
            "groupShortName is at most 12 characters: {short}"
        );
    });
}

/// Every alert reaches someone by default: the address given, else the person who deployed (by
/// their sign-in name, unless they are a guest or a service principal), else the subscription's
/// Owners; and the receiver a person's deployment chose is an output azd keeps and `azd pipeline
/// config` carries, so that CI deploys the same one.
#[test]
fn the_alerts_reach_someone_by_default() {
    let files = bicep_files();
    let (resources, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    let variable = |name: &str| {
        expression(
            resources,
            resources.variable(name).unwrap_or_else(|| panic!("resources.bicep: var {name}")),
        )
    };
    assert_eq!(variable("alertReceiver"), "empty(alertEmail) ? deployerMailbox : alertEmail");
    // A service principal's deployer() has no userPrincipalName: read safely, never dereferenced.
    assert_eq!(variable("deployerName"), "deployer().?userPrincipalName ?? ''");
    assert_eq!(variable("deployerMailbox"), "contains(deployerName, '#EXT#') ? '' : deployerName");
    assert_eq!(
        outputs(resources).get("BLOG_ALERT_EMAIL").map(String::as_str),
        Some("empty(alertEmail) ? deployerMailbox : alertEmail")
    );
    assert_eq!(
        parameter_mappings().get("alertEmail").map(String::as_str),
        Some("BLOG_ALERT_EMAIL")
    );

    let group = only_resource(operations, "Microsoft.Insights/actionGroups");
    assert!(!operations.text(group.declaration).contains("if ("), "the action group always exists");
    assert_eq!(
        expression_at(&group, &["properties", "emailReceivers"]).split(" ? ").next(),
        Some("empty(alertEmail)")
    );
    let owners = expression_at(&group, &["properties", "armRoleReceivers"]);
    assert!(owners.starts_with("!empty(alertEmail) ? [] :"), "{owners}");
    assert!(
        owners.contains("roleId: '8e3af657-a8ff-443c-a75c-2fe8c4bcb635'"),
        "the built-in Owner role: {owners}"
    );
    for alert in resources_of_type(&files, "Microsoft.Insights/metricAlerts") {
        assert_eq!(
            expression_at(&alert, &["properties", "actions"]),
            "[ { actionGroupId: actionGroup.id } ]",
            "{}",
            alert.at()
        );
    }
}

/// The blog being down fires an alert that does not depend on the handler's own lines: a
/// standard availability test of the front page from five places (Microsoft's recommended
/// least), with its metric alert at five minus two failed places.
#[test]
fn an_availability_test_watches_the_front_page() {
    let files = bicep_files();
    let (resources, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    assert_eq!(
        module_argument(resources, "modules/operations.bicep", "frontPageUrl"),
        "'https://${functionApp.outputs.defaultHostName}/'"
    );
    let test = only_resource(operations, "Microsoft.Insights/webtests");
    assert_eq!(test.literal_at(&["kind"]), Some(json!("standard")));
    assert_eq!(test.literal_at(&["properties", "Kind"]), Some(json!("standard")));
    assert_eq!(expression_at(&test, &["properties", "Request", "RequestUrl"]), "frontPageUrl");
    assert_eq!(
        test.literal_at(&["properties", "ValidationRules", "ExpectedHttpStatusCode"]),
        Some(json!(200))
    );
    // Without the hidden-link tag the test is not shown under the component (AVM
    // avm/res/insights/webtest).
    assert!(expression_at(&test, &["tags"]).contains("'hidden-link:${appInsightsId}': 'Resource'"));
    let locations = operations.path(test.body, &["properties", "Locations"]).expect("Locations");
    let count = named_children(locations).iter().filter(|node| node.kind() == "object").count();
    assert_eq!(count, 5, "five places, Microsoft's recommended least");

    let alert = resources_of_type(&files, "Microsoft.Insights/metricAlerts")
        .into_iter()
        .find(|alert| {
            expression_at(alert, &["properties", "criteria"])
                .contains("WebtestLocationAvailabilityCriteria")
        })
        .expect("a metric alert on the availability test");
    assert_eq!(
        expression_at(&alert, &["properties", "scopes"]),
        "[ frontPageTest.id appInsightsId ]"
    );
    assert_eq!(
        alert.literal_at(&["properties", "criteria", "failedLocationCount"]),
        Some(json!(3)),
        "five places minus two"
    );
    assert_eq!(expression_at(&alert, &["properties", "criteria", "webTestId"]), "frontPageTest.id");
    assert_eq!(expression_at(&alert, &["properties", "criteria", "componentId"]), "appInsightsId");
    // The window holds at least one run of each place: the test's largest frequency is 900 s.
    assert_eq!(alert.literal_at(&["properties", "windowSize"]), Some(json!("PT15M")));
}

/// The request-unit budget counts the account's own metric (every request unit: the change-feed
/// functions', the scripts', the operator's), not only the handler's lines; a day's total,
/// evaluated each hour.
#[test]
fn the_request_unit_budget_reads_the_accounts_metric() {
    let files = bicep_files();
    let (resources, operations) =
        (infra_file(&files, "resources.bicep"), infra_file(&files, "modules/operations.bicep"));
    assert_eq!(
        module_argument(resources, "modules/operations.bicep", "cosmosAccountId"),
        "cosmos.outputs.accountId"
    );
    assert_eq!(
        outputs(infra_file(&files, "modules/cosmos.bicep")).get("accountId").map(String::as_str),
        Some("account.id")
    );
    let budget = resources_of_type(&files, "Microsoft.Insights/metricAlerts")
        .into_iter()
        .find(|alert| operations.text(alert.declaration).contains("budgetAlert"))
        .expect("the budget alert");
    assert_eq!(expression_at(&budget, &["properties", "scopes"]), "[ cosmosAccountId ]");
    assert_eq!(budget.literal_at(&["properties", "windowSize"]), Some(json!("P1D")));
    assert_eq!(budget.literal_at(&["properties", "evaluationFrequency"]), Some(json!("PT1H")));
    let criterion = first_item(&budget, &["properties", "criteria", "allOf"]);
    let field =
        |name: &str| operations.path(criterion, &[name]).and_then(|node| operations.literal(node));
    assert_eq!(field("metricNamespace"), Some(json!("Microsoft.DocumentDB/databaseAccounts")));
    assert_eq!(field("metricName"), Some(json!("TotalRequestUnits")));
    assert_eq!(field("timeAggregation"), Some(json!("Total")));
}

/// The workspace takes at most a day's cap of logs (a parameter, from the environment), so that a
/// flood of requests cannot write a month's bill in a day.
#[test]
fn the_logs_have_a_daily_cap() {
    let files = bicep_files();
    let (main, resources, monitoring) = (
        infra_file(&files, "main.bicep"),
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/monitoring.bicep"),
    );
    let workspace = only_resource(monitoring, "Microsoft.OperationalInsights/workspaces");
    assert_eq!(
        expression_at(&workspace, &["properties", "workspaceCapping", "dailyQuotaGb"]),
        "dailyCapGb"
    );
    assert_eq!(
        module_argument(resources, "modules/monitoring.bicep", "dailyCapGb"),
        "logsDailyCapGb"
    );
    assert_eq!(module_argument(main, "resources.bicep", "logsDailyCapGb"), "logsDailyCapGb");
    assert_eq!(main.parameters().get("logsDailyCapGb"), Some(&true), "a default cap");
    assert_eq!(
        parameter_mappings().get("logsDailyCapGb").map(String::as_str),
        Some("BLOG_LOGS_DAILY_CAP_GB")
    );
}
