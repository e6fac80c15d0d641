//! The sandboxed Lua 5.1 VMs that run customization scripts, and their pool.
//!
//! A VM opens only the base, table, string, math and a two-function `os` (`time`, `date`) library; functions
//! that reach outside the sandbox or around it (`dofile`, `load*`, `require` of anything but `kube`, `*fenv`,
//! `*metatable`, `raw*`, `collectgarbage`, `module`, `newproxy`, `string.rep`, `string.dump`, `print`) raise an
//! error naming themselves. Each call runs under an instruction budget (a count hook) and a memory allowance;
//! a script that exceeds either is cut off, reported as [`LuaError::InstructionLimit`] or
//! [`LuaError::MemoryLimit`], and its VM is dropped rather than reused.
//!
//! Each script is compiled once per VM into its own environment (so two customizations' globals never meet)
//! and found again by its [`Script::id`], which changes whenever the customization's uid or generation does.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, Scope, StdLib, Table, VmState};
use parking_lot::Mutex;

use super::kube;

/// Instructions between two budget checks.
const HOOK_EVERY: u32 = 1_000;
/// Compiled scripts one VM keeps before it forgets them all (old generations go this way).
const MAX_FUNCTIONS_PER_VM: usize = 512;

/// What a script may spend in one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Lua VM instructions per call (Karmada bounds a call by one second of wall time instead).
    pub instructions: u64,
    /// Bytes a call may allocate on top of what the VM holds.
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            instructions: 20_000_000,
            memory_bytes: 64 << 20,
        }
    }
}

/// A script failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LuaError {
    /// The script does not compile; `line` is where Lua reported it.
    #[error("line {line}: {message}")]
    Syntax { line: u32, message: String },
    /// The script does not define its operation's function.
    #[error("the script does not define the function {0}")]
    MissingEntryPoint(&'static str),
    /// The script raised an error or called something the sandbox forbids.
    #[error("{0}")]
    Runtime(String),
    /// The script ran past its instruction budget and was cut off.
    #[error("the script was stopped after {0} instructions (the per-call limit)")]
    InstructionLimit(u64),
    /// The script allocated past its memory allowance and was cut off.
    #[error("the script was stopped after allocating more than {0} bytes (the per-call limit)")]
    MemoryLimit(usize),
    /// The function returned something of the wrong shape.
    #[error("{0}")]
    Result(String),
}

/// One compiled-script identity: the source and the function it must define.
#[derive(Clone, Debug)]
pub struct Script {
    /// Unique per (customization uid, generation, operation) in this process.
    pub id: u64,
    pub source: Arc<str>,
    pub entry_point: &'static str,
    /// Shown in error messages, e.g. `statusAggregation`.
    pub chunk_name: &'static str,
}

static NEXT_SCRIPT_ID: AtomicU64 = AtomicU64::new(1);

impl Script {
    pub fn new(
        source: impl Into<Arc<str>>,
        entry_point: &'static str,
        chunk_name: &'static str,
    ) -> Self {
        Self {
            id: NEXT_SCRIPT_ID.fetch_add(1, Ordering::Relaxed),
            source: source.into(),
            entry_point,
            chunk_name,
        }
    }
}

struct Vm {
    lua: Lua,
    budget: Arc<AtomicI64>,
    exhausted: Arc<AtomicBool>,
    functions: HashMap<u64, Function>,
}

/// A pool of sandboxed VMs. Calls take a VM (or make one when all are busy) and give it back afterwards;
/// at most `size` idle VMs are kept.
pub struct LuaVm {
    idle: Mutex<Vec<Vm>>,
    size: usize,
    limits: Limits,
}

impl std::fmt::Debug for LuaVm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LuaVm")
            .field("size", &self.size)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for LuaVm {
    fn default() -> Self {
        Self::new(10, Limits::default())
    }
}

impl LuaVm {
    /// A pool keeping up to `size` idle VMs (Karmada's default pool size is 10).
    pub fn new(size: usize, limits: Limits) -> Self {
        Self {
            idle: Mutex::new(Vec::new()),
            size: size.max(1),
            limits,
        }
    }

    /// Compiles `source` in a fresh sandbox and checks it defines `entry_point`, without calling it.
    pub fn check(
        &self,
        source: &str,
        entry_point: &'static str,
        chunk_name: &'static str,
    ) -> Result<(), LuaError> {
        let mut vm = self
            .new_vm()
            .map_err(|e| LuaError::Runtime(e.to_string()))?;
        let script = Script::new(source, entry_point, chunk_name);
        vm.function(&script, self.limits).map(|_| ())
    }

    /// Calls `script`'s function with the arguments `args` builds, and converts its results with `results`.
    /// Both run inside one scope, which `args` may lend the caller's data to (it ends with the call).
    pub fn call<'env, R>(
        &self,
        script: &Script,
        args: impl for<'s> FnOnce(&Lua, &'s Scope<'s, 'env>) -> mlua::Result<MultiValue>,
        results: impl FnOnce(&Lua, MultiValue) -> Result<R, LuaError>,
    ) -> Result<R, LuaError> {
        let mut vm = match self.idle.lock().pop() {
            Some(vm) => vm,
            None => self
                .new_vm()
                .map_err(|e| LuaError::Runtime(e.to_string()))?,
        };
        let outcome = vm.call(script, self.limits, args, results);
        let reusable = !matches!(
            outcome,
            Err(LuaError::InstructionLimit(_) | LuaError::MemoryLimit(_))
        );
        if reusable {
            let mut idle = self.idle.lock();
            if idle.len() < self.size {
                idle.push(vm);
            }
        }
        outcome
    }

    fn new_vm(&self) -> mlua::Result<Vm> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::OS,
            LuaOptions::default(),
        )?;
        sandbox(&lua)?;
        let budget = Arc::new(AtomicI64::new(0));
        let exhausted = Arc::new(AtomicBool::new(false));
        let (hook_budget, hook_exhausted) = (budget.clone(), exhausted.clone());
        let limit = self.limits.instructions;
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_EVERY),
            move |_, _| {
                if hook_budget.fetch_sub(i64::from(HOOK_EVERY), Ordering::Relaxed) <= 0 {
                    hook_exhausted.store(true, Ordering::Relaxed);
                    return Err(mlua::Error::runtime(format!(
                        "instruction limit of {limit} reached"
                    )));
                }
                Ok(VmState::Continue)
            },
        )?;
        Ok(Vm {
            lua,
            budget,
            exhausted,
            functions: HashMap::new(),
        })
    }
}

impl Vm {
    fn arm(&self, limits: Limits) -> Result<(), LuaError> {
        self.budget.store(
            i64::try_from(limits.instructions).unwrap_or(i64::MAX),
            Ordering::Relaxed,
        );
        self.exhausted.store(false, Ordering::Relaxed);
        let allowance = self.lua.used_memory().saturating_add(limits.memory_bytes);
        self.lua
            .set_memory_limit(allowance)
            .map(|_| ())
            .map_err(|e| LuaError::Runtime(e.to_string()))
    }

    /// Lifts the memory limit (see [`Vm::call`]).
    fn disarm(&self) -> Result<(), LuaError> {
        self.lua
            .set_memory_limit(0)
            .map(|_| ())
            .map_err(|e| LuaError::Runtime(e.to_string()))
    }

    fn classify(&self, error: mlua::Error, limits: Limits) -> LuaError {
        if self.exhausted.load(Ordering::Relaxed) {
            return LuaError::InstructionLimit(limits.instructions);
        }
        match error {
            mlua::Error::MemoryError(_) => LuaError::MemoryLimit(limits.memory_bytes),
            mlua::Error::SyntaxError { message, .. } => LuaError::Syntax {
                line: line_of(&message),
                message,
            },
            mlua::Error::CallbackError { cause, .. } => self.classify((*cause).clone(), limits),
            mlua::Error::RuntimeError(message) => LuaError::Runtime(without_traceback(message)),
            other => LuaError::Runtime(without_traceback(other.to_string())),
        }
    }

    /// The compiled function of `script`, compiling it (in an environment of its own) the first time.
    fn function(&mut self, script: &Script, limits: Limits) -> Result<Function, LuaError> {
        if let Some(function) = self.functions.get(&script.id) {
            return Ok(function.clone());
        }
        self.arm(limits)?;
        let function = self
            .compile(script)
            .map_err(|e| self.classify(e, limits))?
            .ok_or(LuaError::MissingEntryPoint(script.entry_point))?;
        if self.functions.len() >= MAX_FUNCTIONS_PER_VM {
            self.functions.clear();
        }
        self.functions.insert(script.id, function.clone());
        Ok(function)
    }

    fn compile(&self, script: &Script) -> mlua::Result<Option<Function>> {
        let environment = self.lua.create_table()?;
        let inherit = self.lua.create_table()?;
        inherit.set("__index", self.lua.globals())?;
        environment.set_metatable(Some(inherit))?;
        self.lua
            .load(&*script.source)
            .set_name(format!("={}", script.chunk_name))
            .set_environment(environment.clone())
            .exec()?;
        match environment.raw_get::<mlua::Value>(script.entry_point)? {
            mlua::Value::Function(function) => Ok(Some(function)),
            _ => Ok(None),
        }
    }

    fn call<'env, R>(
        &mut self,
        script: &Script,
        limits: Limits,
        args: impl for<'s> FnOnce(&Lua, &'s Scope<'s, 'env>) -> mlua::Result<MultiValue>,
        results: impl FnOnce(&Lua, MultiValue) -> Result<R, LuaError>,
    ) -> Result<R, LuaError> {
        let function = self.function(script, limits)?;
        let vm = &*self;
        let lua = &vm.lua;
        // What `args` lends is readable until the results are read, and not after.
        let outcome = lua.scope(|scope| {
            Ok((|| {
                // The arguments and results are converted without a memory limit: their size is the
                // caller's, not the script's, and without a limit mlua writes tables without a protected
                // call per field.
                vm.disarm()?;
                let args = args(lua, scope).map_err(|e| vm.classify(e, limits))?;
                vm.arm(limits)?;
                let returned = function.call::<MultiValue>(args);
                vm.disarm()?;
                let returned = returned.map_err(|e| vm.classify(e, limits))?;
                results(lua, returned)
            })())
        });
        let ended = super::lazy::end_call(lua);
        let outcome = outcome.map_err(|e| self.classify(e, limits))?;
        ended.map_err(|e| self.classify(e, limits))?;
        outcome
    }
}

/// The message without the stack traceback Lua appends.
fn without_traceback(mut message: String) -> String {
    if let Some(at) = message.find("\nstack traceback:") {
        message.truncate(at);
    }
    message
}

/// The line number in a Lua error message such as `replicaResource:3: '=' expected near 'x'`.
pub fn line_of(message: &str) -> u32 {
    message
        .split(':')
        .nth(1)
        .and_then(|line| line.trim().parse().ok())
        .unwrap_or(0)
}

/// Names the sandbox takes away; calling one raises an error naming it.
const FORBIDDEN_GLOBALS: &[&str] = &[
    "collectgarbage",
    "dofile",
    "getfenv",
    "getmetatable",
    "load",
    "loadfile",
    "loadstring",
    "rawequal",
    "rawget",
    "rawset",
    "setfenv",
    "setmetatable",
    "module",
    "newproxy",
    "print",
];

fn forbidden(lua: &Lua, name: &'static str) -> mlua::Result<Function> {
    lua.create_function(move |_, _: MultiValue| -> mlua::Result<()> {
        Err(mlua::Error::runtime(format!(
            "{name} is not available to resource interpreter customizations"
        )))
    })
}

fn sandbox(lua: &Lua) -> mlua::Result<()> {
    let globals = lua.globals();
    for name in FORBIDDEN_GLOBALS {
        globals.set(*name, forbidden(lua, name)?)?;
    }
    let os: Table = globals.get("os")?;
    let safe_os = lua.create_table()?;
    safe_os.set("time", os.get::<Function>("time")?)?;
    safe_os.set("date", os.get::<Function>("date")?)?;
    globals.set("os", safe_os)?;
    let string: Table = globals.get("string")?;
    string.set("rep", forbidden(lua, "string.rep")?)?;
    string.set("dump", forbidden(lua, "string.dump")?)?;
    let kube = kube::module(lua)?;
    globals.set(
        "require",
        lua.create_function(move |_, name: String| match name.as_str() {
            "kube" => Ok(kube.clone()),
            other => Err(mlua::Error::runtime(format!(
                "module '{other}' is not available to resource interpreter customizations (only \"kube\" is)"
            ))),
        })?,
    )?;
    Ok(())
}
