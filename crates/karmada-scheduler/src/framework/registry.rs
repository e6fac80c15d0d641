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

type Constructor = Box<dyn Fn(Option<&Value>) -> Result<Box<dyn Plugin>, String> + Send + Sync>;

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
                Some(_) => Err("this plugin takes no arguments".to_string()),
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
                        serde_json::from_value(value).map_err(|e| format!("invalid args: {e}"))?
                    }
                };
                Ok(Box::new(build(args)?) as Box<dyn Plugin>)
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
        constructor(args).map_err(|message| InputError::new(format!("plugin {name}"), message))
    }

    pub(crate) fn unknown(&self, name: &str) -> InputError {
        InputError::new(
            format!("plugin {name:?}"),
            format!("unknown plugin; known plugins: {}", self.names().join(", ")),
        )
    }
}
