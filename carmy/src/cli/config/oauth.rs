//! `[security.oauth]` read into the HTTP server's [`OAuth`](carmy_mcp::OAuth) authenticator, its
//! mistakes named by key (checked when the configuration loads, so nothing starts with them).

use super::settings::OAuth;

/// A key of `[security.oauth]` and what is wrong with its value.
pub(in crate::cli) type Problem = (&'static str, String);

impl OAuth {
    /// The authenticator these settings describe; `None` when no issuer is set.
    #[cfg(feature = "oauth")]
    pub(in crate::cli) fn build(
        &self,
        token_file_set: bool,
    ) -> Result<Option<carmy_mcp::OAuth>, Problem> {
        use carmy_mcp::OAuthError;
        let Some(issuer) = self.check(token_file_set)? else {
            return Ok(None);
        };
        let resource = self.resource.as_deref().unwrap_or_default();
        let at = |error: OAuthError| -> Problem {
            let key = match &error {
                OAuthError::Url {
                    what: "resource", ..
                } => "security.oauth.resource",
                OAuthError::Url {
                    what: "jwks_uri", ..
                } => "security.oauth.jwks_uri",
                OAuthError::Url { .. } => "security.oauth.issuer",
                _ => "security.oauth.scopes",
            };
            (key, error.to_string())
        };
        let mut oauth = carmy_mcp::OAuth::new(issuer, resource).map_err(at)?;
        if let Some(audience) = &self.audience {
            oauth = oauth.audience(audience);
        }
        if let Some(jwks) = &self.jwks_uri {
            oauth = oauth.jwks_uri(jwks).map_err(at)?;
        }
        oauth = oauth
            .required_scopes(self.required_scopes.iter().cloned())
            .map_err(|error| ("security.oauth.required_scopes", error.to_string()))?;
        for line in &self.scopes {
            let mut words = line.split_whitespace();
            let scope = words.next().unwrap_or_default();
            oauth = oauth.scope(scope, words).map_err(at)?;
        }
        Ok(Some(oauth))
    }

    /// Without the `oauth` feature, setting an issuer is refused rather than ignored.
    #[cfg(not(feature = "oauth"))]
    pub(in crate::cli) fn build(
        &self,
        token_file_set: bool,
    ) -> Result<Option<std::convert::Infallible>, Problem> {
        match self.check(token_file_set)? {
            None => Ok(None),
            Some(_) => Err((
                "security.oauth.issuer",
                "this binary is built without OAuth (carmy's `oauth` feature)".to_owned(),
            )),
        }
    }

    /// The issuer, if OAuth is on, once what needs no feature to check holds.
    fn check(&self, token_file_set: bool) -> Result<Option<&str>, Problem> {
        let Some(issuer) = self.issuer.as_deref() else {
            let set = [
                ("security.oauth.resource", self.resource.is_some()),
                ("security.oauth.audience", self.audience.is_some()),
                ("security.oauth.jwks_uri", self.jwks_uri.is_some()),
                (
                    "security.oauth.required_scopes",
                    !self.required_scopes.is_empty(),
                ),
                ("security.oauth.scopes", !self.scopes.is_empty()),
            ];
            return match set.iter().find(|(_, set)| *set) {
                Some((key, _)) => Err((key, "set without `security.oauth.issuer`".to_owned())),
                None => Ok(None),
            };
        };
        if token_file_set {
            return Err((
                "security.oauth.issuer",
                "`security.token_file` is set too: callers authenticate with one or the other"
                    .to_owned(),
            ));
        }
        if self.resource.is_none() {
            return Err((
                "security.oauth.resource",
                "required with `security.oauth.issuer`: this server's MCP endpoint as clients \
                 reach it"
                    .to_owned(),
            ));
        }
        if let Some(line) = self
            .scopes
            .iter()
            .find(|line| line.split_whitespace().count() < 2)
        {
            return Err((
                "security.oauth.scopes",
                format!("{line:?}: expected `SCOPE GRANT...` (what the scope gives)"),
            ));
        }
        Ok(Some(issuer))
    }
}
