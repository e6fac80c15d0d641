//! The plugin registry: plugin names to constructors, with typed arguments read from a profile's
//! `pluginConfig[].args`.
//!
//! Invariants: names are unique; arguments are checked when a framework is built, so a typo in a profile is an
//! error naming the plugin and the accepted fields rather than a plugin running with defaults. The
//! `apiVersion`/`kind` pair of an args object (e.g. `ClusterLocalityArgs`) is accepted and ignored.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::plugin::Plugin;
use crate::error::InputError;

type Constructor = Box<dyn Fn(Option<&Value>) -> Result<Box<dyn Plugin>, ArgsError> + Send + Sync>;

/// Why a plugin's args were refused: where inside the args object (`""` for the object as a whole, else a
/// field path such as `availablePercentage`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgsError {
    pub path: String,
    pub message: String,
}

impl ArgsError {
    fn whole(message: impl Into<String>) -> Self {
        Self {
            path: String::new(),
            message: message.into(),
        }
    }
}

/// Known plugins by name.
#[derive(Default)]
pub struct Registry {
    constructors: BTreeMap<String, Constructor>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("plugins", &self.names())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a plugin without arguments; giving it args in a profile is an error.
    pub fn register<P, F>(&mut self, name: &str, build: F) -> Result<(), InputError>
    where
        P: Plugin + 'static,
        F: Fn() -> P + Send + Sync + 'static,
    {
        self.insert(
            name,
            Box::new(move |args: Option<&Value>| match args {
                None => Ok(Box::new(build()) as Box<dyn Plugin>),
                Some(_) => Err(ArgsError::whole("this plugin takes no arguments")),
            }),
        )
    }

    /// Registers a plugin with typed arguments `A` (`A::default()` when a profile gives none).
    pub fn register_with_args<A, P, F>(&mut self, name: &str, build: F) -> Result<(), InputError>
    where
        A: DeserializeOwned + Default,
        P: Plugin + 'static,
        F: Fn(A) -> Result<P, String> + Send + Sync + 'static,
    {
        self.insert(
            name,
            Box::new(move |args: Option<&Value>| {
                let args = match args {
                    None | Some(Value::Null) => A::default(),
                    Some(value) => {
                        let mut value = value.clone();
                        if let Value::Object(object) = &mut value {
                            object.remove("apiVersion");
                            object.remove("kind");
                        }
                        serde_path_to_error::deserialize(value).map_err(|e| {
                            let path = e.path().to_string();
                            ArgsError {
                                path: if path == "." { String::new() } else { path },
                                message: format!("invalid args: {}", e.inner()),
                            }
                        })?
                    }
                };
                Ok(Box::new(build(args).map_err(ArgsError::whole)?) as Box<dyn Plugin>)
            }),
        )
    }

    fn insert(&mut self, name: &str, constructor: Constructor) -> Result<(), InputError> {
        if self.constructors.contains_key(name) {
            return Err(InputError::new(
                format!("plugin {name}"),
                "is already registered",
            ));
        }
        self.constructors.insert(name.to_string(), constructor);
        Ok(())
    }

    /// Registered plugin names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.constructors.keys().map(String::as_str).collect()
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.constructors.contains_key(name)
    }

    /// Builds plugin `name` with `args`.
    pub fn build(&self, name: &str, args: Option<&Value>) -> Result<Box<dyn Plugin>, InputError> {
        let constructor = self
            .constructors
            .get(name)
            .ok_or_else(|| self.unknown(name))?;
        constructor(args).map_err(|e| InputError::new(format!("plugin {name}"), e.message))
    }

    /// Checks `args` for plugin `name` without keeping the plugin: `Ok` or where inside the args it fails.
    /// An unknown `name` is an error at the args' root.
    pub fn check_args(&self, name: &str, args: Option<&Value>) -> Result<(), ArgsError> {
        let constructor = self
            .constructors
            .get(name)
            .ok_or_else(|| ArgsError::whole(self.unknown(name).message))?;
        constructor(args).map(drop)
    }

    pub(crate) fn unknown(&self, name: &str) -> InputError {
        InputError::new(
            format!("plugin {name:?}"),
            format!("unknown plugin; known plugins: {}", self.names().join(", ")),
        )
    }
}
