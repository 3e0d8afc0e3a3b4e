//! One run on a fresh QuickJS runtime: install the API, compile the script, call its function,
//! then run the queued callbacks (and promise jobs) until none is left.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Instant;

use rquickjs::context::EvalOptions;
use rquickjs::convert::Coerced;
use rquickjs::{Context, Ctx, Function, Object, Runtime, Value as JsValue};
use serde_json::{Value, json};

use super::overlay::State;
use super::{Invocation, Limits, Partition, PartitionReader, Run, ScriptOutcome, TriggerOperation};
use crate::scripts::{ScriptError, ScriptFailure};

const SERVER_API: &str = include_str!("server_api.js");

/// QuickJS's stack budget. Runs happen on tokio's blocking threads (2 MiB of stack), beneath a
/// few frames of the caller: half of it leaves the rest ample room.
const MAX_STACK_BYTES: usize = 1024 * 1024;

/// Runs `source`'s function as Cosmos DB would, invoked as `invocation`, on `partition`'s items.
pub fn run(
    source: &str,
    function_name: &str,
    invocation: &Invocation,
    partition: &Partition,
    reader: Rc<dyn PartitionReader>,
    limits: &Limits,
) -> Run {
    let state = Rc::new(RefCell::new(State::new(partition.clone(), reader, limits, invocation)));
    let timed_out = Rc::new(Cell::new(false));
    let result = execute(source, function_name, invocation, partition, &state, limits, &timed_out);
    let mut state = state.borrow_mut();
    // A timeout, an abort or a store failure wins over what the script did afterwards (it may
    // have caught the exception that stopped it).
    let result = if timed_out.get() {
        Err(ScriptError::Failed(ScriptFailure::DidNotFinish { limit: limits.max_duration }))
    } else if let Some(failure) = state.failure.take() {
        Err(failure)
    } else {
        result.map(|body| ScriptOutcome { body, writes: state.net_writes() })
    };
    Run { result, reads: state.reads() }
}

fn execute(
    source: &str,
    function_name: &str,
    invocation: &Invocation,
    partition: &Partition,
    state: &Rc<RefCell<State>>,
    limits: &Limits,
    timed_out: &Rc<Cell<bool>>,
) -> Result<Value, ScriptError> {
    let internal = |error: rquickjs::Error| ScriptError::Failed(ScriptFailure::Engine(error));
    let runtime = Runtime::new().map_err(internal)?;
    runtime.set_memory_limit(limits.max_memory_bytes);
    runtime.set_max_stack_size(MAX_STACK_BYTES);
    let deadline = Instant::now() + limits.max_duration;
    {
        let (state, timed_out) = (state.clone(), timed_out.clone());
        runtime.set_interrupt_handler(Some(Box::new(move || {
            if Instant::now() >= deadline {
                timed_out.set(true);
            }
            timed_out.get() || state.try_borrow().is_ok_and(|state| state.failure.is_some())
        })));
    }
    let context = Context::full(&runtime).map_err(internal)?;
    let result =
        context.with(|ctx| call(&ctx, source, function_name, invocation, partition, state));
    result.map_err(|failure| match failure {
        Failure::Exception { message, .. } if message == "out of memory" => out_of_memory(limits),
        Failure::Exception { message, number } => ScriptError::thrown(number, message),
        Failure::Allocation => out_of_memory(limits),
        Failure::Script(error) => error,
    })
}

fn out_of_memory(limits: &Limits) -> ScriptError {
    ScriptError::Failed(ScriptFailure::OutOfMemory { limit_bytes: limits.max_memory_bytes })
}

enum Failure {
    /// What the script threw: the Error's `message`, or `String(value)`, and its `number`
    /// (`new Error(number, message)`, as on Cosmos DB), if it has one.
    Exception {
        message: String,
        number: Option<i64>,
    },
    Allocation,
    Script(ScriptError),
}

fn call(
    ctx: &Ctx<'_>,
    source: &str,
    function_name: &str,
    invocation: &Invocation,
    partition: &Partition,
    state: &Rc<RefCell<State>>,
) -> Result<Value, Failure> {
    let fail = |error: rquickjs::Error| match error {
        rquickjs::Error::Exception => Failure::exception(&ctx.catch()),
        rquickjs::Error::Allocation => Failure::Allocation,
        other => Failure::Exception { message: other.to_string(), number: None },
    };
    let install: Function = ctx.eval(SERVER_API).map_err(fail)?;
    let host = {
        let state = state.clone();
        Function::new(ctx.clone(), move |kind: String, payload: String| {
            state.borrow_mut().dispatch(&kind, &payload)
        })
        .map_err(fail)?
    };
    let (args, trigger) = match invocation {
        Invocation::Procedure(args) => (Value::Array(args.clone()), Value::Null),
        Invocation::PostTrigger { operation, document } => {
            let stored = state.borrow_mut().written_by_request(document);
            let operation = match operation {
                TriggerOperation::Create => "Create",
                TriggerOperation::Replace => "Replace",
                TriggerOperation::Upsert => "Upsert",
            };
            (json!([]), json!({"operationType": operation, "body": document, "stored": stored}))
        }
    };
    let setup = json!({"selfLink": partition.self_link, "altLink": partition.alt_link, "args": args, "trigger": trigger});
    let api: Object = install.call((host, setup.to_string())).map_err(fail)?;

    // Sloppy mode, as on Cosmos DB.
    let mut options = EvalOptions::default();
    options.strict = false;
    if let Err(error) = ctx.eval_with_options::<(), _>(source, options) {
        let exception = ctx.catch();
        let syntax = exception.as_object().and_then(|error| error.get::<_, String>("name").ok());
        return Err(match (error, syntax.as_deref()) {
            (rquickjs::Error::Exception, Some("SyntaxError")) => {
                Failure::Script(ScriptError::Failed(ScriptFailure::DoesNotCompile {
                    message: describe(&exception),
                }))
            }
            (rquickjs::Error::Exception, _) => Failure::exception(&exception),
            (other, _) => fail(other),
        });
    }
    let entry: JsValue = ctx.globals().get(function_name).map_err(fail)?;
    if !entry.is_function() {
        return Err(Failure::Script(ScriptError::Failed(ScriptFailure::NoFunction {
            function: function_name.to_owned(),
        })));
    }
    let invoke: Function = api.get("invoke").map_err(fail)?;
    let drain: Function = api.get("drain").map_err(fail)?;
    invoke.call::<_, ()>((entry, args.to_string())).map_err(fail)?;
    loop {
        drain.call::<_, ()>(()).map_err(fail)?;
        if !ctx.execute_pending_job() {
            break;
        }
    }
    let body: Function = api.get("body").map_err(fail)?;
    match body.call::<_, Option<String>>(()).map_err(fail)? {
        None => Ok(Value::Null),
        Some(text) => serde_json::from_str(&text).map_err(|source| {
            Failure::Script(ScriptError::Failed(ScriptFailure::BodyNotJson {
                script: function_name.to_owned(),
                source,
            }))
        }),
    }
}

impl Failure {
    /// What the script threw, with the `number` it threw with, if any.
    fn exception(value: &JsValue<'_>) -> Failure {
        let number = value
            .as_object()
            .and_then(|error| error.get::<_, Option<f64>>("number").ok().flatten());
        // A whole number only: the substatus Cosmos DB would answer is one.
        let number = number
            .filter(|number| number.fract() == 0.0 && number.abs() < 1e15)
            .map(|number| number as i64);
        Failure::Exception { message: describe(value), number }
    }
}

/// The Error's `message`, or `String(value)`.
fn describe(value: &JsValue<'_>) -> String {
    if let Some(Ok(Some(message))) =
        value.as_object().map(|error| error.get::<_, Option<String>>("message"))
    {
        return message;
    }
    value
        .get::<Coerced<String>>()
        .map_or_else(|_| "<unprintable exception>".to_owned(), |Coerced(text)| text)
}
