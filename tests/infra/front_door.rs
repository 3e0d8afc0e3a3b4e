//! The optional Front Door: off by default, routing to the app, caching by query string,
//! bypassing its cache for a sign-in and a writer, and the public URL it gives.

use super::*;

/// The Front Door (modules/frontdoor.bicep) is off unless asked for, with one parameter; when
/// on, it caches what the handler's `Cache-Control` lets a shared cache keep (caching on, each
/// query string its own page, no rule that overrides the origin's durations), and it bypasses
/// its cache for a request that carries a sign-in: Front Door ignores `Vary` (Microsoft Learn,
/// "Caching with Azure Front Door"), so without the bypass a signed-in reader could be served
/// the anonymous copy of a page. The bypass names the cookies the handler sets and App Service
/// Authentication's session cookie. The tests below check one of these each.
///
/// The open reports of wrong Microsoft.Cdn type definitions (Azure/bicep-types-az 1932:
/// `azureOrigin` refused on an origin; 2178: `secrets` on a classic CDN profile) concern what
/// the modules do not use: they name the origin by host name and have no secret. The profile
/// and endpoint are modules/frontdoor-endpoint.bicep's, deployed before the app.
fn front_door(check: impl FnOnce(&[BicepFile], &BicepFile)) {
    let files = bicep_files();
    check(&files, infra_file(&files, "modules/frontdoor.bicep"));
}

/// Off unless `BLOG_FRONT_DOOR` says standard; deployed only when on, in front of the app,
/// its address handed on.
#[test]
fn the_front_door_is_deployed_only_when_asked_for() {
    front_door(|files, front_door| {
        let (main, resources) =
            (infra_file(files, "main.bicep"), infra_file(files, "resources.bicep"));
        let text = |file: &BicepFile| fs::read_to_string(&file.path).unwrap();
        assert!(
            text(main).contains("param frontDoor string = 'none'"),
            "off unless BLOG_FRONT_DOOR says standard"
        );
        assert_eq!(
            parameter_mappings().get("frontDoor").map(String::as_str),
            Some("BLOG_FRONT_DOOR")
        );
        assert_eq!(
            module_argument(main, "resources.bicep", "frontDoor"),
            "frontDoor == 'standard'"
        );
        assert!(text(resources).contains("param frontDoor bool = false"));
        assert!(
            text(resources)
                .contains("module edge 'modules/frontdoor-endpoint.bicep' = if (frontDoor)"),
            "deployed only when on"
        );
        assert!(
            text(resources).contains("module cdn 'modules/frontdoor.bicep' = if (frontDoor)"),
            "deployed only when on"
        );
        assert_eq!(
            module_argument(resources, "modules/frontdoor.bicep", "originHostName"),
            "functionApp.outputs.defaultHostName"
        );
        assert_eq!(
            module_argument(resources, "modules/frontdoor.bicep", "profileName"),
            "edge.outputs.profileName"
        );
        assert_eq!(
            module_argument(resources, "modules/frontdoor.bicep", "endpointName"),
            "edge.outputs.endpointName"
        );
        assert_eq!(
            outputs(resources).get("BLOG_FRONT_DOOR_URL").map(String::as_str),
            Some("frontDoor ? 'https://${edge.outputs.hostName}' : ''")
        );
        let endpoint_module = infra_file(files, "modules/frontdoor-endpoint.bicep");
        assert_eq!(
            outputs(endpoint_module).get("hostName").map(String::as_str),
            Some("endpoint.properties.hostName")
        );
        let existing: Vec<String> = front_door
            .resources()
            .iter()
            .filter(|resource| resource.existing)
            .map(|resource| resource.symbol.clone())
            .collect();
        assert_eq!(
            existing,
            ["profile", "endpoint"],
            "the route's module names the profile and endpoint, made before"
        );
    });
}

/// A Standard profile whose origin is the app, reached by its own host name, and whose route
/// caches each query string as its own page, through the bypass rules.
#[test]
fn the_front_door_caches_each_query_string_apart() {
    front_door(|files, front_door| {
        let profile = only_resource(
            infra_file(files, "modules/frontdoor-endpoint.bicep"),
            "Microsoft.Cdn/profiles",
        );
        assert_eq!(profile.literal_at(&["sku", "name"]), Some(json!("Standard_AzureFrontDoor")));
        assert_eq!(profile.literal_at(&["location"]), Some(json!("global")));
        let origin = only_resource(front_door, "Microsoft.Cdn/profiles/originGroups/origins");
        assert_eq!(expression_at(&origin, &["properties", "hostName"]), "originHostName");
        assert_eq!(
            expression_at(&origin, &["properties", "originHostHeader"]),
            "originHostName",
            "App Service routes by Host"
        );
        let route = only_resource(front_door, "Microsoft.Cdn/profiles/afdEndpoints/routes");
        assert_eq!(
            route.literal_at(&["properties", "cacheConfiguration", "queryStringCachingBehavior"]),
            Some(json!("UseQueryString"))
        );
        assert_eq!(
            expression_at(&route, &["properties", "ruleSets"]),
            "[ { id: bypassSignedIn.id } ]"
        );
        assert!(
            expression_at(&route, &["dependsOn"]).contains("origin"),
            "a route to an origin group without an origin is refused"
        );
    });
}

/// The conditions of the Front Door's rules, as `name:selector` (`UrlPath:` with its values),
/// each rule checked to turn caching off for its request and to do nothing else.
fn bypassed_by_rules(front_door: &BicepFile) -> BTreeSet<String> {
    let rules = resources_of_type(
        std::slice::from_ref(front_door),
        "Microsoft.Cdn/profiles/ruleSets/rules",
    );
    let mut bypassed = BTreeSet::new();
    for rule in &rules {
        let actions = rule.literal_at(&["properties", "actions"]).unwrap();
        assert_eq!(
            actions,
            json!([{"name": "RouteConfigurationOverride", "parameters": {"typeName": "DeliveryRuleRouteConfigurationOverrideActionParameters"}}]),
            "{}: a route override without cacheConfiguration is caching disabled",
            rule.at()
        );
        let conditions = rule.literal_at(&["properties", "conditions"]).unwrap();
        for condition in conditions.as_array().unwrap() {
            let parameters = &condition["parameters"];
            match condition["name"].as_str().unwrap() {
                "Cookies" | "RequestHeader" => {
                    assert_eq!(parameters["operator"], "Any", "{}", rule.at());
                    bypassed.insert(format!(
                        "{}:{}",
                        condition["name"].as_str().unwrap(),
                        parameters["selector"].as_str().unwrap()
                    ));
                }
                "UrlPath" => {
                    bypassed.insert(format!("UrlPath:{}", parameters["matchValues"]));
                }
                other => panic!("{}: an unexpected condition {other}", rule.at()),
            }
        }
    }
    bypassed
}

/// Every rule turns caching off for its request, and nothing else: for a sign-in (App Service
/// Authentication's session cookie, a token, `/.auth/`) and for a writer just back from a write
/// (the handler's own cookie, which the bypass names as the handler spells it).
#[test]
fn the_front_door_bypasses_its_cache_for_a_sign_in_or_a_writer() {
    front_door(|_, front_door| {
        let bypassed = bypassed_by_rules(front_door);
        for expected in
            ["Cookies:AppServiceAuthSession", "Cookies:blog_wrote", "RequestHeader:Authorization"]
        {
            assert!(bypassed.contains(expected), "no bypass for {expected}: {bypassed:?}");
        }
        assert!(
            bypassed
                .iter()
                .any(|condition| condition.starts_with("UrlPath:") && condition.contains(".auth/")),
            "{bypassed:?}"
        );
        let posts = fs::read_to_string(repo_root().join("src/http/pages/posts.rs")).unwrap();
        assert!(posts.contains("const JUST_WROTE: &str = \"blog_wrote\";"));
    });
}

/// No instance affinity: App Service's ARRAffinity cookie on every returning reader would make
/// each answer personal to the handler, and nothing would be cached.
#[test]
fn the_app_sets_no_instance_affinity_cookie_that_would_defeat_the_cache() {
    front_door(|files, _| {
        let app =
            only_resource(infra_file(files, "modules/functionapp.bicep"), "Microsoft.Web/sites");
        assert_eq!(app.literal_at(&["properties", "clientAffinityEnabled"]), Some(json!(false)));
    });
}

/// The app's own app setting, `name` → the expression of its value.
fn app_settings(site: &Resource) -> BTreeMap<String, String> {
    setting_entries(site, Hosting::Flex)
        .into_iter()
        .filter_map(|entry| {
            let name = site.file.literal(site.file.property(entry, "name")?)?.as_str()?.to_owned();
            Some((name, expression(site.file, site.file.property(entry, "value")?)))
        })
        .collect()
}

/// BLOG_PUBLIC_URL, the address every absolute link of the pages and feeds names (src/config.rs
/// reads it before WEBSITE_HOSTNAME): the Front Door endpoint's host when there is one, read from
/// the endpoint itself, which is deployed before the app and depends on nothing of it (else the
/// app and the origin would wait on each other); without, the app's own host name, computed
/// from its name, which holds only while the app does not opt in to a hashed default host name.
#[test]
fn the_public_url_is_the_front_doors_when_there_is_one() {
    let files = bicep_files();
    let (resources, app, endpoint_module) = (
        infra_file(&files, "resources.bicep"),
        infra_file(&files, "modules/functionapp.bicep"),
        infra_file(&files, "modules/frontdoor-endpoint.bicep"),
    );
    let site = only_resource(app, SITE);
    assert_eq!(app_settings(&site).get("BLOG_PUBLIC_URL").map(String::as_str), Some("publicUrl"));
    assert_eq!(
        module_argument(resources, "modules/functionapp.bicep", "publicUrl"),
        "frontDoor ? 'https://${edge.outputs.hostName}' : 'https://${appHostName}'"
    );

    // The endpoint is made in the module whose output that is, from nothing the app gives.
    let endpoint = only_resource(endpoint_module, "Microsoft.Cdn/profiles/afdEndpoints");
    assert!(!endpoint.existing, "{}: the endpoint is made here", endpoint.at());
    assert_eq!(
        outputs(endpoint_module).get("hostName").map(String::as_str),
        Some("endpoint.properties.hostName")
    );
    assert_eq!(
        endpoint_module.parameters().keys().map(String::as_str).collect::<Vec<_>>(),
        ["name", "tags"],
        "the endpoint's module takes nothing of the app"
    );
    assert!(
        descendants(endpoint_module.tree.root_node())
            .iter()
            .all(|node| node.kind() != "module_declaration"),
        "nothing else is deployed with the endpoint"
    );

    // Without Front Door: the host name App Service gives an app that does not opt in, at
    // creation, to `<name>-<hash>.<region>-01.azurewebsites.net`.
    assert_eq!(
        expression(resources, resources.variable("appHostName").unwrap()),
        "'${names.functionApp}.azurewebsites.net'"
    );
    assert_eq!(
        module_argument(resources, "modules/functionapp.bicep", "appName"),
        "names.functionApp"
    );
    assert!(
        site.file.path(site.body, &["properties", "autoGeneratedDomainNameLabelScope"]).is_none(),
        "{}: with autoGeneratedDomainNameLabelScope the app's host name is hashed, and appHostName (BLOG_PUBLIC_URL, \
         the sign-in's redirect URI) no longer names it",
        site.at()
    );
}

/// Behind Front Door, App Service Authentication builds its redirects from the host Front Door
/// forwards (`forwardProxy` `Standard`, no custom header names: Front Door sets the standard
/// X-Forwarded-Host), and the registration takes the sign-in's callback there; without Front
/// Door, from the request's own Host.
#[test]
fn sign_in_through_the_front_door_redirects_to_the_front_doors_host() {
    sign_in(|SignIn { main, auth, .. }| {
        assert_eq!(
            expression_at(auth, &["properties", "httpSettings", "forwardProxy"]),
            "{ convention: behindFrontDoor ? 'Standard' : 'NoProxy' }"
        );
        assert_eq!(
            module_argument(main, "modules/functionapp.bicep", "behindFrontDoor"),
            "frontDoor"
        );
        assert!(
            module_argument(main, "modules/signin.bicep", "hostNames")
                .starts_with("frontDoor ? [appHostName, edge.outputs.hostName]"),
            "the Front Door's callback is registered when there is one"
        );
    });
}
