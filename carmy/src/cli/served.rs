//! What the command line serves: a runtime, or a builder it builds once the configuration is
//! read, with the store and the resource directory that configuration names.

use std::process::ExitCode;

use carmy_core::Runtime;

use super::config;
#[cfg(feature = "fs")]
use super::files;
#[cfg(feature = "store")]
use super::store;
use super::tool_settings;

/// What the command line serves: a runtime, or one it builds once it has read the flags that
/// shape it.
#[derive(Debug)]
pub(super) enum Served {
    Runtime(Runtime),
    /// Boxed: a builder is large beside a runtime, which is a handle.
    Builder(Box<carmy_core::Carmy>),
    #[cfg(feature = "fs")]
    Files {
        /// Boxed: a builder is large beside a runtime, which is a handle.
        carmy: Box<carmy_core::Carmy>,
        default_root: std::path::PathBuf,
    },
}

impl Served {
    /// The runtime: the one given, or the one built with the store and the resource directory
    /// `settings` name (a serving subcommand), or the in-memory store and the binary's own
    /// documents (the others).
    pub(super) async fn runtime(
        self,
        name: &str,
        settings: Option<&config::Settings>,
    ) -> Result<Runtime, ExitCode> {
        let configured = |carmy: carmy_core::Carmy| match settings {
            Some(settings) => tool_settings::apply(carmy, &settings.tool_settings),
            None => carmy,
        };
        match self {
            Served::Runtime(runtime) => match settings.and_then(tool_settings::refused_on_built) {
                Some(refused) => {
                    eprintln!("error: {refused}");
                    Err(ExitCode::from(2))
                }
                None => Ok(runtime),
            },
            Served::Builder(carmy) => {
                let carmy = with_store(configured(*carmy), name, settings).await?;
                carmy.build().map_err(|error| {
                    eprintln!("error: {error}");
                    ExitCode::from(2)
                })
            }
            #[cfg(feature = "fs")]
            Served::Files {
                carmy,
                default_root,
            } => {
                let carmy = with_store(configured(*carmy), name, settings).await?;
                let root = settings.and_then(|settings| settings.resources.root_path.as_deref());
                files::build(carmy, &default_root, root)
            }
        }
    }
}

/// `carmy` with the store `settings` name, when serving (feature `store`).
async fn with_store(
    carmy: carmy_core::Carmy,
    name: &str,
    settings: Option<&config::Settings>,
) -> Result<carmy_core::Carmy, ExitCode> {
    #[cfg(feature = "store")]
    if let Some(settings) = settings {
        return store::apply(
            carmy,
            name,
            settings.store.as_deref(),
            &settings.request_ids,
        )
        .await;
    }
    // Without the feature the runtime keeps the store it was built with: bounds meant for the
    // command line's store are refused rather than ignored.
    if let Some((key, _)) =
        settings.and_then(|settings| settings.request_ids.set().first().copied())
    {
        eprintln!(
            "error: {key} cannot apply: this binary keeps the store it was built with (carmy's \
             `store` feature lets the command line choose and bound it)"
        );
        return Err(ExitCode::from(2));
    }
    let _ = name;
    Ok(carmy)
}
