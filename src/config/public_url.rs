//! The blog's public address: where its readers reach it, written into every absolute link the
//! pages and feeds give (the canonical address, `og:url`, `og:image`, the Atom feeds' links).
//!
//! It comes from configuration, never from the request. Otherwise a page kept by a shared cache
//! (a CDN keys its copies by URL alone) would carry whatever `Host` or `X-Forwarded-Host` its
//! first requester sent, to every reader after them. And search engines would read that address
//! as the canonical one. So the pages and feeds are the same bytes whatever a request's headers
//! say. In order, it is first `BLOG_PUBLIC_URL` (Bicep sets it to the Front Door endpoint when
//! there is one). Else it is `WEBSITE_HOSTNAME`, the function app's default host name where the
//! platform sets it (azure-functions-host reads it as
//! `EnvironmentSettingNames.AzureWebsiteHostName`). Core Tools sets that to `localhost:<port>`
//! (azure-functions-core-tools `StartHostAction.GetConfigurationSettings`). The custom handler
//! inherits it with the host's environment (`DefaultWorkerProcessFactory.CreateWorkerProcess`).
//! Else it is the address the handler listens on.

use std::net::SocketAddr;
use std::sync::Arc;

use super::ConfigError;

/// `http(s)://host[:port]`, without a path: see the module's documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicUrl(Arc<str>);

/// The setting that names the blog's public address.
pub(crate) const PUBLIC_URL_SETTING: &str = "BLOG_PUBLIC_URL";

/// The setting the platform names the app's default host name in.
const WEBSITE_HOSTNAME: &str = "WEBSITE_HOSTNAME";

/// What Core Tools sets in the host's environment (azure-functions-core-tools
/// `Program.SetCoreToolsEnvironmentVariables`).
const CORE_TOOLS: &str = "FUNCTIONS_CORETOOLS_ENVIRONMENT";

impl PublicUrl {
    /// `scheme://authority` when the scheme is `http` or `https` and the authority a host name,
    /// an IPv4 address or a bracketed IPv6 address, with a port or not; a `/` after it is
    /// allowed and dropped. Anything else (a path, a query, user information, a character that
    /// could end an attribute it is written in) is `None`.
    pub(crate) fn parse(text: &str) -> Option<PublicUrl> {
        let (scheme, rest) = text.trim().split_once("://")?;
        let scheme = if scheme.eq_ignore_ascii_case("https") {
            "https"
        } else if scheme.eq_ignore_ascii_case("http") {
            "http"
        } else {
            return None;
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        is_authority(authority)
            .then(|| PublicUrl(format!("{scheme}://{}", authority.to_ascii_lowercase()).into()))
    }

    /// Where a handler listening on `address` is reached from this machine: `localhost` for a
    /// loopback or unspecified address (the README's `http://localhost:7071/`), the address
    /// itself otherwise.
    pub(crate) fn of_listener(address: SocketAddr) -> PublicUrl {
        let port = address.port();
        let ip = address.ip();
        let text = if ip.is_loopback() || ip.is_unspecified() {
            format!("http://localhost:{port}")
        } else {
            format!("http://{address}")
        };
        PublicUrl(text.into())
    }

    /// `http(s)://host[:port]`.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// [`PublicUrl::parse`], refused as the setting it would be read from.
impl std::str::FromStr for PublicUrl {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<PublicUrl, ConfigError> {
        PublicUrl::parse(text).ok_or_else(|| ConfigError::Invalid {
            name: PUBLIC_URL_SETTING,
            value: text.to_owned(),
            expected: "the blog's address as readers reach it, like https://blog.example (http or https, a host, a port or not, no path)",
        })
    }
}

impl std::fmt::Display for PublicUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// RFC 3986 §3.2.2–3.2.3: a registered name, an IPv4 address or an IP literal in brackets, then
/// an optional port of digits.
fn is_authority(authority: &str) -> bool {
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port))
            if !host.ends_with(':')
                && (host.starts_with('[') == host.ends_with(']'))
                && !port.contains(']') =>
        {
            (host, Some(port))
        }
        _ => (authority, None),
    };
    let port_ok =
        port.is_none_or(|port| !port.is_empty() && port.len() <= 5 && port.parse::<u16>().is_ok());
    let host_ok = match host.strip_prefix('[').and_then(|inner| inner.strip_suffix(']')) {
        Some(literal) => literal.parse::<std::net::Ipv6Addr>().is_ok(),
        None => {
            !host.is_empty()
                && host.len() <= 253
                && host.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && label.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
                        && !label.starts_with('-')
                        && !label.ends_with('-')
                })
        }
    };
    host_ok && port_ok
}

/// `BLOG_PUBLIC_URL`, else `WEBSITE_HOSTNAME` (`https` on Azure; `http` under Core Tools, which
/// says so in `FUNCTIONS_CORETOOLS_ENVIRONMENT` and serves plain HTTP unless `--useHttps`); `None`
/// leaves it to the listener's address once bound.
pub(super) fn public_url(
    lookup: super::read::Lookup<'_>,
) -> Result<Option<PublicUrl>, ConfigError> {
    if let Some(value) = lookup(PUBLIC_URL_SETTING) {
        return value.parse().map(Some);
    }
    let Some(host) = lookup(WEBSITE_HOSTNAME) else { return Ok(None) };
    let scheme = if lookup(CORE_TOOLS).is_some() { "http" } else { "https" };
    PublicUrl::parse(&format!("{scheme}://{host}")).map(Some).ok_or(ConfigError::Invalid {
        name: WEBSITE_HOSTNAME,
        value: host,
        expected: "a host name (set by the platform; set BLOG_PUBLIC_URL to override it)",
    })
}

#[cfg(test)]
mod tests {
    use super::PublicUrl;

    #[test]
    fn a_public_url_is_a_scheme_and_an_authority_only() {
        let parsed = |text: &str| PublicUrl::parse(text).map(|url| url.as_str().to_owned());
        assert_eq!(parsed("https://blog.example").as_deref(), Some("https://blog.example"));
        assert_eq!(parsed("HTTPS://Blog.Example/").as_deref(), Some("https://blog.example"));
        assert_eq!(parsed("http://localhost:7071").as_deref(), Some("http://localhost:7071"));
        assert_eq!(parsed("http://[::1]:8080").as_deref(), Some("http://[::1]:8080"));
        assert_eq!(parsed("http://192.0.2.1").as_deref(), Some("http://192.0.2.1"));
        for refused in [
            "blog.example",
            "ftp://blog.example",
            "https://blog.example/blog",
            "https://blog.example?x",
            "https://user@blog.example",
            "https://blog.example:99999",
            "https://blog.example:",
            "https://",
            "https://bl\"og.example",
            "https://-blog.example",
            "https://blog..example",
            "https://[::1",
            "https://[not-ip]",
            "https://blög.example",
            "javascript://x",
        ] {
            assert_eq!(parsed(refused), None, "{refused}");
        }
    }

    #[test]
    fn a_listener_on_loopback_or_everywhere_is_reached_as_localhost() {
        let of =
            |address: &str| PublicUrl::of_listener(address.parse().unwrap()).as_str().to_owned();
        assert_eq!(of("127.0.0.1:7071"), "http://localhost:7071");
        assert_eq!(of("0.0.0.0:8080"), "http://localhost:8080");
        assert_eq!(of("[::1]:80"), "http://localhost:80");
        assert_eq!(of("192.0.2.7:8080"), "http://192.0.2.7:8080");
    }
}
