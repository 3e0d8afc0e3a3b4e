//! The smoke test's own tests: its command line, and what it waits out and how long.

use super::answer::{jittered, may_have_been_done, next_pause, settling, shown, status_text};
use super::*;

/// `handler smoke`'s parser alone.
#[derive(clap::Parser)]
#[command(name = "smoke")]
struct Smoke {
    #[command(flatten)]
    args: Args,
}

/// Parses as `handler smoke <args>` does; an error is clap's text (or [`Args::options`]'s).
fn parse(args: &[&str], variable: Option<&str>) -> Result<Options, String> {
    use clap::Parser;
    let parsed = Smoke::try_parse_from(std::iter::once("smoke").chain(args.iter().copied()))
        .map_err(|error| error.render().to_string())?;
    parsed.args.options(variable.map(str::to_owned))
}

#[test]
fn bad_arguments_are_named() {
    let options =
        parse(&["http://localhost:7071/", "--dev-user", "alice", "--wait", "5"], None).unwrap();
    assert_eq!(options.base, "http://localhost:7071");
    assert_eq!(options.credential, Credential::DevUser("alice".into()));
    assert_eq!(options.wait, Duration::from_secs(5));
    assert_eq!(options.settle, DEFAULT_SETTLE);
    assert_eq!(parse(&["http://x"], None).unwrap().wait, DEFAULT_WAIT);
    assert_eq!(parse(&["http://x", "--settle", "3"], None).unwrap().settle, Duration::from_secs(3));
    assert_eq!(
        parse(&["https://x.azurewebsites.net"], Some("t0ken")).unwrap().credential,
        Credential::Token("t0ken".into())
    );
    assert_eq!(
        parse(&["https://x.azurewebsites.net"], Some(" ")).unwrap().credential,
        Credential::Anonymous
    );
    assert_eq!(
        parse(&["https://x.azurewebsites.net", "--token", "a"], Some("b")).unwrap().credential,
        Credential::Token("a".into())
    );
    assert_eq!(
        parse(&["https://x.azurewebsites.net"], None).unwrap().credential,
        Credential::Anonymous
    );

    let refused = |args: &[&str], variable: Option<&str>, says: &str| {
        let error = parse(args, variable).unwrap_err();
        assert!(error.contains(says), "{args:?}: {error}");
    };
    refused(&[], None, "<BASE_URL>");
    refused(&["localhost:7071"], None, "not an http or https URL");
    refused(&["not a url"], None, "not a URL");
    refused(&["http://x", "--token", "a", "--dev-user", "b"], None, "cannot be used with");
    refused(&["http://x", "--dev-user", "b"], Some("a"), "not both");
    refused(&["http://x", "--frobnicate"], None, "unexpected argument '--frobnicate'");
    refused(&["http://x", "--wait", "soon"], None, "invalid value 'soon' for '--wait <SECONDS>'");
    refused(&["http://x", "--settle", "-1"], None, "invalid value '-1' for '--settle <SECONDS>'");
    refused(&["http://x", "--token"], None, "a value is required for '--token <ACCESS_TOKEN>'");
    refused(&["http://x", "http://y"], None, "unexpected argument 'http://y'");
    refused(&["http://x/?a=1"], None, "without a query");
}

/// 1 s, doubled each retry, up to 15 s, and no further.
#[test]
fn the_pauses_double_from_one_second_up_to_fifteen() {
    let pauses: Vec<u64> =
        std::iter::successors(Some(FIRST_PAUSE), |&pause| Some(next_pause(pause)))
            .take(7)
            .map(|pause| pause.as_secs())
            .collect();
    assert_eq!(pauses, [1, 2, 4, 8, 15, 15, 15]);
}

#[test]
fn jitter_adds_at_most_a_tenth() {
    let pause = Duration::from_secs(4);
    assert_eq!(jittered(pause, 0), pause);
    assert_eq!(jittered(pause, 1000), pause);
    for random in [1, 499, 999, u64::MAX] {
        let jittered = jittered(pause, random);
        assert!(jittered >= pause && jittered < pause + pause / 10, "{random}: {jittered:?}");
    }
    assert_eq!(shown(Duration::from_millis(4_300)), "4 s");
    assert_eq!(shown(Duration::from_millis(400)), "0.4 s");
}

/// 5xx, 408 and 429 settle by themselves; 401/403 only while the sign-in settles; every other
/// 4xx, and every success, is the blog's own answer.
#[test]
fn only_what_settles_by_itself_is_retried() {
    for status in [500, 502, 503, 504, 507, 408, 429] {
        assert!(settling(status, false).is_some() && settling(status, true).is_some(), "{status}");
    }
    for status in [401, 403] {
        assert!(settling(status, true).is_some(), "{status}");
        assert_eq!(settling(status, false), None, "{status}");
    }
    for status in [200, 201, 204, 304, 400, 404, 405, 409, 412, 413, 415, 422] {
        assert_eq!(settling(status, true), None, "{status}");
    }
    assert_eq!(settling(503, false), Some("the app is still starting"));
    assert!(settling(502, false).unwrap().contains("no answer from the app"));
    // Only a server's failure leaves in doubt whether a write was done.
    assert!([500, 502, 503, 504].into_iter().all(may_have_been_done));
    assert!(![401, 403, 408, 429].into_iter().any(may_have_been_done));
    assert_eq!(status_text(503), "503 Service Unavailable");
    assert_eq!(status_text(599), "599");
}
