//! Shared dependencies: `State<T>` parameters, registered once with `Carmy::state`.

use std::{
    any::{Any, TypeId, type_name},
    collections::HashMap,
    fmt,
    ops::Deref,
    sync::Arc,
};

/// A shared dependency handed to a tool, registered with [`Carmy::state`](crate::Carmy::state).
/// Cheap to clone (an `Arc`); dereferences to `T`.
///
/// A tool that takes `State<T>` without `T` registered is refused by
/// [`Carmy::build`](crate::Carmy::build), naming the tool and the type, so it never fails per
/// call.
pub struct State<T: ?Sized>(Arc<T>);

impl<T: ?Sized> State<T> {
    /// Wraps a shared value, e.g. to call a tool directly in a unit test.
    pub fn new(value: T) -> Self
    where
        T: Sized,
    {
        Self(Arc::new(value))
    }

    /// Wraps a value that is already shared.
    pub fn from_arc(value: Arc<T>) -> Self {
        Self(value)
    }

    /// The shared `Arc`.
    pub fn into_inner(self) -> Arc<T> {
        self.0
    }
}

impl<T: ?Sized> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T: ?Sized> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&&*self.0).finish()
    }
}

/// The registered shared values, by type.
#[derive(Clone, Default)]
pub(crate) struct StateMap {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: Arc<T>) {
        self.values.insert(TypeId::of::<T>(), value);
    }

    pub(crate) fn contains(&self, type_id: TypeId) -> bool {
        self.values.contains_key(&type_id)
    }

    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<State<T>> {
        let value = self.values.get(&TypeId::of::<T>())?;
        Arc::clone(value).downcast::<T>().ok().map(State)
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMap")
            .field("len", &self.values.len())
            .finish()
    }
}

/// The shared types a tool needs, collected at `build()` time.
#[derive(Debug, Default)]
pub struct Requirements {
    pub(crate) states: Vec<StateRequirement>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct StateRequirement {
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
}

impl Requirements {
    /// Declares that the tool takes `State<T>`.
    pub fn state<T: Send + Sync + 'static>(&mut self) {
        self.states.push(StateRequirement {
            type_id: TypeId::of::<T>(),
            type_name: type_name::<T>(),
        });
    }
}
