//! Collects every error of a phase, so the user sees all their mistakes at once.

/// An accumulator of `syn::Error`s, combined into one (rendered as several `compile_error!`s).
#[derive(Default)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// Keeps the value of `result`, or records its error.
    pub(crate) fn ok<T>(&mut self, result: syn::Result<T>) -> Option<T> {
        result.map_err(|error| self.push(error)).ok()
    }

    /// Adds another phase's errors.
    pub(crate) fn extend(&mut self, result: syn::Result<()>) {
        self.ok(result);
    }

    /// `Err` with every recorded error, if there was any.
    pub(crate) fn finish(self) -> syn::Result<()> {
        match self.0 {
            Some(errors) => Err(errors),
            None => Ok(()),
        }
    }
}
