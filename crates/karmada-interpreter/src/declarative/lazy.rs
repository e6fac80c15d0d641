//! JSON objects handed to scripts lazily: an object becomes an empty Lua table whose fields are converted the
//! first time a script reads them (`__index`), so a script that reads three fields of a Deployment pays for
//! three fields, not for the whole object, twice (in and back out). What a script never touched comes back
//! out as the original JSON, without a trip through Lua.
//!
//! A proxy's JSON lives in a [`Node`] (the root and the path to the object), kept on the Rust side and found
//! through a table from the proxy to the node's number. The caller's JSON is lent, not copied ([`lend`]), for
//! the call; when it ends ([`end_call`]) the nodes and that table are emptied, so the collector has no
//! userdata or finalizer per proxy, and a proxy a script kept past its call raises an error when read instead
//! of reading freed data. A node remembers the keys it handed to Lua: those are read back from the
//! table itself (assigned, changed or removed by the script), the others from the JSON. Writes of new keys
//! pass `__newindex`, which records them the same way. `pairs` and `next` (Lua 5.1 has no `__pairs`) are
//! replaced by versions that convert a proxy's remaining fields first; `rawget` and friends are not available
//! to scripts, so a script cannot tell a proxy from a table. Arrays are converted eagerly (Lua 5.1's `ipairs`
//! and `#` read tables raw) and carry mlua's array metatable, so an empty one comes back as `[]`.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use mlua::{AnyUserData, Either, Function, Lua, LuaSerdeExt, Scope, Table, Value as LuaValue};
use parking_lot::Mutex;
use serde_json::{Map, Value};

/// Objects of scalars with at most this many fields are converted whole.
const EAGER_FIELDS: usize = 16;

fn is_scalar(value: &Value) -> bool {
    !matches!(value, Value::Array(_) | Value::Object(_))
}

/// Whether `map` crosses whole rather than as a proxy: a small object of scalars.
pub(super) fn is_small(map: &Map<String, Value>) -> bool {
    map.len() <= EAGER_FIELDS && map.values().all(is_scalar)
}

/// Nesting deeper than this is refused (a table that contains itself would never end).
const MAX_DEPTH: usize = 128;

/// One step from a node's root to its object.
#[derive(Debug, Clone)]
enum Step {
    Key(Arc<str>),
    Index(usize),
}

/// The JSON a proxy's node reads from.
#[derive(Clone)]
enum Root {
    /// A copy, for JSON that does not outlive the conversion (a `kube` function's result, tests).
    Copied(Arc<Value>),
    /// The caller's JSON, lent for one call: a scoped userdata, destroyed when the call ends, so a proxy kept
    /// past its call reads nothing freed and gets an error instead.
    Lent(AnyUserData),
}

/// The JSON object behind one proxy table.
struct Node {
    root: Root,
    path: Vec<Step>,
    /// Keys handed to Lua (or written by the script): the table holds their current value.
    taken: Mutex<HashSet<Box<str>>>,
    /// Every key has been handed over.
    complete: AtomicBool,
}

impl Node {
    fn new(root: Root) -> Self {
        Self {
            root,
            path: Vec::new(),
            taken: Mutex::default(),
            complete: AtomicBool::new(false),
        }
    }

    /// Calls `f` with the node's object (`None` when the path no longer leads to one).
    fn with_object<R>(&self, f: impl FnOnce(Option<&Map<String, Value>>) -> R) -> mlua::Result<R> {
        let walk = |root: &Value| {
            let mut value = Some(root);
            for step in &self.path {
                value = value.and_then(|value| match step {
                    Step::Key(key) => value.get(&**key),
                    Step::Index(index) => value.get(*index),
                });
            }
            f(value.and_then(Value::as_object))
        };
        match &self.root {
            Root::Copied(root) => Ok(walk(root)),
            Root::Lent(root) => root
                .borrow_scoped::<Value, R>(walk)
                .map_err(|error| match error {
                    mlua::Error::UserDataDestructed | mlua::Error::UserDataTypeMismatch => {
                        mlua::Error::runtime(STALE)
                    }
                    other => other,
                }),
        }
    }

    fn child(&self, step: Step) -> Self {
        let mut path = self.path.clone();
        path.push(step);
        Self {
            path,
            ..Self::new(self.root.clone())
        }
    }
}

/// What one VM keeps for its proxies.
pub(super) struct Context {
    /// proxy table → the index of its [`Node`] in `slab`, for the proxies of the current call.
    nodes: Table,
    slab: Mutex<Vec<Arc<Node>>>,
    proxy_metatable: Table,
    array_metatable: Table,
}

pub(super) fn context(lua: &Lua) -> mlua::Result<mlua::AppDataRef<'_, Context>> {
    if let Some(context) = lua.app_data_ref::<Context>() {
        return Ok(context);
    }
    let nodes = lua.create_table()?;
    let proxy_metatable = lua.create_table()?;
    proxy_metatable.raw_set("__index", lua.create_function(index)?)?;
    proxy_metatable.raw_set("__newindex", lua.create_function(new_index)?)?;
    replace_iteration(lua, &nodes)?;
    lua.set_app_data(Context {
        nodes,
        slab: Mutex::default(),
        proxy_metatable,
        array_metatable: lua.array_metatable(),
    });
    lua.app_data_ref::<Context>()
        .ok_or_else(|| mlua::Error::runtime("the lazy conversion context is missing"))
}

/// `pairs` and `next` that hand over a proxy's remaining fields before iterating it.
fn replace_iteration(lua: &Lua, nodes: &Table) -> mlua::Result<()> {
    let globals = lua.globals();
    let complete = lua.create_function(|lua, value: LuaValue| {
        if let LuaValue::Table(table) = value {
            hand_over_all(lua, &table)?;
        }
        Ok(())
    })?;
    let (pairs, next): (Function, Function) = lua
        .load(
            "local complete, nodes, pairs, next = ...
             return function(t) if nodes[t] ~= nil then complete(t) end return pairs(t) end,
                    function(t, k) if nodes[t] ~= nil then complete(t) end return next(t, k) end",
        )
        .set_name("=lazy")
        .call((
            complete,
            nodes.clone(),
            globals.get::<Function>("pairs")?,
            globals.get::<Function>("next")?,
        ))?;
    globals.set("pairs", pairs)?;
    globals.set("next", next)?;
    Ok(())
}

/// Forgets the proxies of the call that ends: the table of proxies is emptied and the nodes dropped. Proxies
/// a script kept read as errors afterwards ([`STALE`]).
pub(super) fn end_call(lua: &Lua) -> mlua::Result<()> {
    let Some(context) = lua.app_data_ref::<Context>() else {
        return Ok(());
    };
    let mut slab = context.slab.lock();
    if !slab.is_empty() {
        slab.clear();
        context.nodes.clear()?;
    }
    Ok(())
}

/// A proxy read after its call ended.
const STALE: &str = "an object given to an earlier call was read after that call ended: a script gets its \
                     objects afresh on every call and cannot keep them for the next (e.g. in a global)";

/// The node of `table` when it is a proxy of the current call.
fn node_of(context: &Context, table: &Table) -> mlua::Result<Option<Arc<Node>>> {
    match context.nodes.raw_get::<LuaValue>(table)? {
        LuaValue::Integer(index) => Ok(usize::try_from(index)
            .ok()
            .and_then(|index| context.slab.lock().get(index).cloned())),
        _ => Ok(None),
    }
}

/// The node of `table`, which carries the proxy metatable: a proxy of an earlier call has none.
fn live_node_of(lua: &Lua, table: &Table) -> mlua::Result<Arc<Node>> {
    node_of(&*context(lua)?, table)?.ok_or_else(|| mlua::Error::runtime(STALE))
}

/// Lifts the VM's memory limit while a callback converts JSON the caller gave (its size is the caller's, not
/// the script's; without a limit mlua writes tables without a protected call per field) and puts it back
/// when dropped: what was converted still counts against the limit for the script's next allocation.
struct Unlimited<'a> {
    lua: &'a Lua,
    limit: usize,
}

impl<'a> Unlimited<'a> {
    fn new(lua: &'a Lua) -> mlua::Result<Self> {
        let limit = lua.set_memory_limit(0)?;
        Ok(Self { lua, limit })
    }
}

impl Drop for Unlimited<'_> {
    fn drop(&mut self) {
        // Setting a limit only fails on a VM without memory accounting, where lifting it failed first.
        let _ = self.lua.set_memory_limit(self.limit);
    }
}

/// `__index`: hands over `key` the first time it is read.
fn index(lua: &Lua, (table, key): (Table, LuaValue)) -> mlua::Result<LuaValue> {
    let LuaValue::String(key) = key else {
        return Ok(LuaValue::Nil);
    };
    let node = live_node_of(lua, &table)?;
    let text = key.to_str()?;
    if node.taken.lock().contains(&*text) {
        // Handed over earlier and removed since.
        return Ok(LuaValue::Nil);
    }
    hand_over(lua, &node, &table, &text, LuaValue::String(key.clone()))
}

/// Converts the field `key` of `node` into `table` and records it as handed over; `lua_key` is `key` as a Lua
/// string when the caller has one (no second copy is made in Lua).
fn hand_over(
    lua: &Lua,
    node: &Node,
    table: &Table,
    key: &str,
    lua_key: LuaValue,
) -> mlua::Result<LuaValue> {
    let value = node.with_object(|object| {
        let Some(json) = object.and_then(|object| object.get(key)) else {
            return Ok(None);
        };
        let _unlimited = Unlimited::new(lua)?;
        convert(lua, json, &|| Ok(node.child(Step::Key(Arc::from(key))))).map(Some)
    })??;
    let Some(value) = value else {
        return Ok(LuaValue::Nil);
    };
    node.taken.lock().insert(key.into());
    match lua_key {
        LuaValue::Nil => table.raw_set(key, value.clone())?,
        lua_key => table.raw_set(lua_key, value.clone())?,
    }
    Ok(value)
}

/// Hands over every field of `table` if it is a proxy.
fn hand_over_all(lua: &Lua, table: &Table) -> mlua::Result<()> {
    let Some(node) = node_of(&*context(lua)?, table)? else {
        return Ok(());
    };
    if node.complete.load(Ordering::Relaxed) {
        return Ok(());
    }
    let keys: Vec<String> = node.with_object(|object| {
        let taken = node.taken.lock();
        object
            .into_iter()
            .flat_map(Map::keys)
            .filter(|k| !taken.contains(k.as_str()))
            .cloned()
            .collect()
    })?;
    for key in keys {
        hand_over(lua, &node, table, &key, LuaValue::Nil)?;
    }
    node.complete.store(true, Ordering::Relaxed);
    Ok(())
}

/// `__newindex`: a key the table does not hold is being written; from now on the table holds it.
fn new_index(lua: &Lua, (table, key, value): (Table, LuaValue, LuaValue)) -> mlua::Result<()> {
    let node = live_node_of(lua, &table)?;
    if let LuaValue::String(text) = &key {
        node.taken.lock().insert(text.to_str()?.as_ref().into());
    }
    table.raw_set(key, value)
}

/// `value` as a Lua value: objects as proxies of a copy of `value` (made when the first proxy is), arrays
/// and small objects of scalars converted.
pub fn to_lua(lua: &Lua, value: &Value) -> mlua::Result<LuaValue> {
    let root = std::cell::OnceCell::new();
    convert(lua, value, &|| {
        Ok(Node::new(Root::Copied(Arc::clone(
            root.get_or_init(|| Arc::new(value.clone())),
        ))))
    })
}

/// `value` as a Lua value, like [`to_lua`], but its proxies read `value` itself rather than a copy, for as
/// long as `scope` lasts (one call); afterwards reading a field not handed over yet is an error.
pub fn lend<'s, 'env>(
    lua: &Lua,
    scope: &'s Scope<'s, 'env>,
    value: &'env Value,
) -> mlua::Result<LuaValue> {
    let root = std::cell::OnceCell::new();
    convert(lua, value, &|| {
        let root = match root.get() {
            Some(root) => AnyUserData::clone(root),
            None => {
                let made = scope.create_any_userdata_ref(value)?;
                root.get_or_init(|| made).clone()
            }
        };
        Ok(Node::new(Root::Lent(root)))
    })
}

/// `json` as Lua; `node` makes the proxy's node when `json` is an object.
fn convert(
    lua: &Lua,
    json: &Value,
    node: &dyn Fn() -> mlua::Result<Node>,
) -> mlua::Result<LuaValue> {
    Ok(match json {
        Value::Null => LuaValue::Nil,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => LuaValue::Integer(i),
            None => LuaValue::Number(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let table = lua.create_table_with_capacity(items.len(), 0)?;
            for (i, item) in items.iter().enumerate() {
                set(lua, &table, i + 1, item, &|| {
                    Ok(node()?.child(Step::Index(i)))
                })?;
            }
            table.set_metatable(Some(context(lua)?.array_metatable.clone()))?;
            LuaValue::Table(table)
        }
        // A small object of scalars is cheaper whole than through a proxy (one callback per field read, and
        // another for each absent field asked about).
        Value::Object(map) if is_small(map) => {
            // One call for the whole table: keys and values pushed straight, no per-field round trip.
            let fields = map
                .iter()
                .filter_map(|(key, value)| scalar(value).map(|value| (key.as_str(), value)));
            LuaValue::Table(lua.create_table_from(Sized(fields, map.len()))?)
        }
        Value::Object(_) => {
            let node = Arc::new(node()?);
            let context = context(lua)?;
            let table = lua.create_table()?;
            table.set_metatable(Some(context.proxy_metatable.clone()))?;
            let index = {
                let mut slab = context.slab.lock();
                slab.push(node);
                slab.len() - 1
            };
            context.nodes.raw_set(&table, index)?;
            LuaValue::Table(table)
        }
    })
}

/// A JSON scalar as a value mlua pushes without making a Lua value on the Rust side first; `None` for
/// `null` (and for arrays and objects, which [`convert`] handles).
pub(super) type Scalar<'a> = Either<Either<bool, i64>, Either<f64, &'a str>>;

pub(super) fn scalar(json: &Value) -> Option<Scalar<'_>> {
    Some(match json {
        Value::Bool(b) => Either::Left(Either::Left(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Either::Left(Either::Right(i)),
            None => Either::Right(Either::Left(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => Either::Right(Either::Right(s.as_str())),
        Value::Null | Value::Array(_) | Value::Object(_) => return None,
    })
}

/// An iterator that announces `.1` items, so a table built from it is made that size at once.
pub(super) struct Sized<I>(pub I, pub usize);

impl<I: Iterator> Iterator for Sized<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        self.0.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.1, None)
    }
}

/// `table[key] = json`, scalars pushed straight (no Lua value held on the Rust side in between); `null`
/// leaves the key unset.
fn set(
    lua: &Lua,
    table: &Table,
    key: impl mlua::IntoLua,
    json: &Value,
    node: &dyn Fn() -> mlua::Result<Node>,
) -> mlua::Result<()> {
    match json {
        Value::Null => Ok(()),
        Value::Bool(b) => table.raw_set(key, *b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => table.raw_set(key, i),
            None => table.raw_set(key, n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => table.raw_set(key, s.as_str()),
        Value::Array(_) | Value::Object(_) => table.raw_set(key, convert(lua, json, node)?),
    }
}

/// A Lua value as JSON: `nil` is `null`, doubles without a fraction are integers, a proxy is its JSON with
/// the fields the script holds read from the table.
pub fn from_lua(lua: &Lua, value: LuaValue) -> mlua::Result<Value> {
    read(lua, &value, 0)
}

fn read(lua: &Lua, value: &LuaValue, depth: usize) -> mlua::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(mlua::Error::runtime(format!(
            "a table nested deeper than {MAX_DEPTH} levels (does a table contain itself?)"
        )));
    }
    Ok(match value {
        LuaValue::Nil => Value::Null,
        LuaValue::Boolean(b) => Value::Bool(*b),
        LuaValue::Integer(i) => Value::from(*i),
        LuaValue::Number(n) => number(*n),
        LuaValue::String(s) => Value::String(s.to_str()?.to_string()),
        LuaValue::Table(table) => read_table(lua, table, depth)?,
        // Functions, threads and userdata have no JSON form (dropped from objects, as mlua's serde does).
        _ => Value::Null,
    })
}

fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        #[allow(clippy::cast_possible_truncation)]
        return Value::from(n as i64);
    }
    serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
}

fn supported(value: &LuaValue) -> bool {
    matches!(
        value,
        LuaValue::Boolean(_)
            | LuaValue::Integer(_)
            | LuaValue::Number(_)
            | LuaValue::String(_)
            | LuaValue::Table(_)
    )
}

fn read_table(lua: &Lua, table: &Table, depth: usize) -> mlua::Result<Value> {
    let context = context(lua)?;
    let metatable = table.metatable();
    let is_array_marked = metatable.as_ref() == Some(&context.array_metatable);
    let length = table.raw_len();
    if is_array_marked || length > 0 {
        let mut items = Vec::with_capacity(length);
        for i in 1..=length {
            items.push(read(lua, &table.raw_get::<LuaValue>(i)?, depth + 1)?);
        }
        return Ok(Value::Array(items));
    }
    let mut untouched_fields = Vec::new();
    let node = match node_of(&context, table)? {
        Some(node) => Some(node),
        None if metatable.as_ref() == Some(&context.proxy_metatable) => {
            return Err(mlua::Error::runtime(STALE));
        }
        None => None,
    };
    if let Some(node) = node {
        let taken = node.taken.lock();
        node.with_object(|object| {
            for (key, value) in object.into_iter().flatten() {
                if !taken.contains(key.as_str())
                    && let Some(value) = untouched(value)
                {
                    untouched_fields.push((key.clone(), value));
                }
            }
        })?;
    }
    drop(context);
    let mut held: Vec<(String, LuaValue)> = Vec::new();
    // One pass in one call (a step of `pairs` is a call of its own).
    table.for_each::<LuaValue, LuaValue>(|key, value| {
        if !supported(&value) {
            return Ok(());
        }
        let key = match key {
            LuaValue::String(s) => s.to_str()?.to_string(),
            LuaValue::Integer(i) => i.to_string(),
            LuaValue::Number(n) => number(n).to_string(),
            other => {
                return Err(mlua::Error::runtime(format!(
                    "a table key of type {} has no JSON form (object keys are strings)",
                    other.type_name()
                )));
            }
        };
        held.push((key, value));
        Ok(())
    })?;
    held.sort_by(|a, b| a.0.cmp(&b.0));
    let mut object = Map::with_capacity(untouched_fields.len() + held.len());
    object.extend(untouched_fields);
    for (key, value) in held {
        object.insert(key, read(lua, &value, depth + 1)?);
    }
    Ok(Value::Object(object))
}

/// A field the script never touched, as it would have come back through Lua: no `null` members, whole
/// doubles as integers.
fn untouched(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        // Most objects come back as they are: a copy is cheaper than a rebuild (no key is hashed again).
        value if comes_back_as_is(value) => Some(value.clone()),
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            Some(number(n.as_f64().unwrap_or(f64::NAN)))
        }
        Value::Array(items) => Some(Value::Array(
            items
                .iter()
                .map(|item| untouched(item).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(map) => Some(Value::Object(
            map.iter()
                .filter_map(|(k, v)| untouched(v).map(|v| (k.clone(), v)))
                .collect(),
        )),
        other => Some(other.clone()),
    }
}

/// Whether [`untouched`] leaves `value` as it is: no `null` member in any object, no whole double.
fn comes_back_as_is(value: &Value) -> bool {
    match value {
        Value::Number(n) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| number(f) == *value)
        }
        Value::Array(items) => items.iter().all(comes_back_as_is),
        Value::Object(map) => map
            .values()
            .all(|value| !value.is_null() && comes_back_as_is(value)),
        Value::Null | Value::Bool(_) | Value::String(_) => true,
    }
}
