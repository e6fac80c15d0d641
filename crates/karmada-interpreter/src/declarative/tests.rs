use karmada_api::config::ResourceInterpreterCustomization;
use karmada_api::work::{AggregatedStatusItem, ResourceHealth};
use serde_json::{Value, json};

use super::*;
use crate::{InterpretError, Interpreter, ResourceInterpreter};

fn customization(
    name: &str,
    uid: &str,
    generation: i64,
    rules: Value,
) -> ResourceInterpreterCustomization {
    serde_json::from_value(json!({
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": name, "uid": uid, "generation": generation},
        "spec": {"target": {"apiVersion": "example.io/v1", "kind": "Widget"}, "customizations": rules},
    }))
    .expect("customization")
}

fn widget(replicas: i64) -> Value {
    json!({"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "ns", "generation": 2},
           "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}},
                    "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "token", "key": "k"}}}]}]}}}})
}

fn layer_with(rules: Value) -> Interpreter {
    let layer = ConfigurableInterpreter::new(LuaVm::new(
        2,
        Limits {
            instructions: 200_000,
            memory_bytes: 4 << 20,
        },
    ));
    layer.load(&[customization("widget", "u1", 1, rules)]);
    Interpreter::native().with_customization(Arc::new(layer))
}

fn script(source: &str) -> Value {
    json!({"luaScript": source})
}

#[test]
fn every_operation_with_karmadas_entry_points() {
    let interpreter = layer_with(json!({
        "replicaResource": script("local kube = require('kube')\nfunction GetReplicas(obj)\n  return obj.spec.replicas, kube.accuratePodRequirements(obj.spec.template)\nend"),
        "replicaRevision": script("function ReviseReplica(obj, desired)\n  obj.spec.replicas = desired\n  return obj\nend"),
        "retention": script("function Retain(desired, observed)\n  desired.spec.paused = observed.spec.paused\n  return desired\nend"),
        "statusReflection": script("function ReflectStatus(obj)\n  return {ready = obj.status.ready, conditions = obj.status.conditions}\nend"),
        "statusAggregation": script("function AggregateStatus(desired, items)\n  local ready = 0\n  for i = 1, #items do\n    ready = ready + items[i].status.ready\n  end\n  desired.status = {ready = ready, clusters = #items}\n  return desired\nend"),
        "healthInterpretation": script("function InterpretHealth(obj)\n  return obj.status.ready == obj.spec.replicas\nend"),
        "dependencyInterpretation": script("local kube = require('kube')\nfunction GetDependencies(obj)\n  return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)\nend"),
        "componentResource": script("function GetComponents(obj)\n  return {{name = 'main', replicas = obj.spec.replicas}}\nend"),
    }));
    let object = widget(6);
    let info = interpreter.get_replicas(&object).expect("replicas");
    assert_eq!(info.replicas, 6);
    let requirements = info.requirements.expect("requirements");
    assert_eq!(requirements.namespace, "");
    assert_eq!(
        serde_json::to_value(&requirements.resource_request).expect("json"),
        json!({"cpu": "250m"})
    );
    let revised = interpreter.revise_replica(&object, 4).expect("revise");
    assert_eq!(revised.pointer("/spec/replicas"), Some(&json!(4)));
    assert_eq!(
        revised.pointer("/spec/template/spec/containers/0/name"),
        Some(&json!("c"))
    );
    let mut observed = object.clone();
    observed["spec"]["paused"] = json!(true);
    let retained = interpreter.retain(&object, &observed).expect("retain");
    assert_eq!(retained.pointer("/spec/paused"), Some(&json!(true)));
    let mut member = object.clone();
    member["status"] = json!({"ready": 6, "conditions": [], "noise": "x"});
    assert_eq!(
        interpreter.reflect_status(&member).expect("reflect"),
        Some(json!({"conditions": [], "ready": 6}))
    );
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Healthy
    );
    member["status"]["ready"] = json!(5);
    assert_eq!(
        interpreter.interpret_health(&member),
        ResourceHealth::Unhealthy
    );
    let items: Vec<AggregatedStatusItem> = serde_json::from_value(json!([
        {"clusterName": "m1", "status": {"ready": 4}, "applied": true},
        {"clusterName": "m2", "status": {"ready": 2}, "applied": true},
    ]))
    .expect("items");
    let aggregated = interpreter
        .aggregate_status(&object, &items)
        .expect("aggregate");
    assert_eq!(
        aggregated.get("status"),
        Some(&json!({"clusters": 2, "ready": 6}))
    );
    let dependencies = interpreter.get_dependencies(&object).expect("dependencies");
    assert_eq!(dependencies.len(), 1);
    assert_eq!(
        (
            dependencies[0].kind.as_str(),
            dependencies[0].name.as_str(),
            dependencies[0].namespace.as_str()
        ),
        ("Secret", "token", "ns")
    );
    let components = interpreter.get_components(&object).expect("components");
    assert_eq!(
        components,
        vec![crate::Component {
            name: "main".into(),
            replicas: 6,
            replica_requirements: None
        }]
    );
    // Operations without a script fall through to the defaults.
    let other = json!({"apiVersion": "example.io/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"replicas": 3}});
    assert_eq!(interpreter.get_replicas(&other).map(|r| r.replicas), Ok(0));
}

#[test]
fn a_runaway_script_is_cut_off_and_the_pool_keeps_working() {
    let interpreter = layer_with(json!({
        "replicaResource": script("function GetReplicas(obj)\n  while true do end\nend"),
        "replicaRevision": script("function ReviseReplica(obj, n)\n  local t = {}\n  for i = 1, 100000000 do t[i] = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' .. i end\n  return obj\nend"),
        "healthInterpretation": script("function InterpretHealth(obj)\n  return true\nend"),
    }));
    let object = widget(1);
    let error = interpreter.get_replicas(&object).expect_err("runaway");
    assert!(error.to_string().contains("instructions"), "{error}");
    let error = interpreter.revise_replica(&object, 2).expect_err("memory");
    assert!(error.to_string().contains("stopped"), "{error}");
    assert_eq!(
        interpreter.interpret_health(&object),
        ResourceHealth::Healthy
    );
}

#[test]
fn the_memory_allowance_holds_once_fields_have_been_converted() {
    // Reading fields converts them with the limit lifted; it must be back in force for the script's own
    // allocations afterwards.
    let interpreter = layer_with(json!({
        "replicaRevision": script("function ReviseReplica(obj, n)\n  local s = obj.metadata.name .. obj.spec.template.spec.containers[1].name\n  for i = 1, 40 do s = s .. s end\n  return obj\nend"),
    }));
    let error = interpreter
        .revise_replica(&widget(1), 2)
        .expect_err("memory");
    assert!(error.to_string().contains("allocating"), "{error}");
}

#[test]
fn the_sandbox_refuses_files_processes_and_other_modules() {
    for (body, name) in [
        ("os.execute('true')", "execute"),
        ("io.open('/etc/passwd')", "io"),
        ("require('socket')", "socket"),
        ("loadstring('return 1')()", "loadstring"),
        ("dofile('/etc/passwd')", "dofile"),
        ("string.rep('x', 10)", "string.rep"),
        ("setmetatable({}, {})", "setmetatable"),
    ] {
        let interpreter = layer_with(json!({
            "healthInterpretation": script(&format!("function InterpretHealth(obj)\n  {body}\n  return true\nend")),
        }));
        let layer_error = interpreter.interpret_health(&widget(1));
        assert_eq!(layer_error, ResourceHealth::Unknown, "{body} must fail");
        let layer = ConfigurableInterpreter::default();
        layer.load(&[customization("w", "u", 1, json!({"healthInterpretation": script(&format!("function InterpretHealth(obj)\n  {body}\n  return true\nend"))}))]);
        let error =
            ResourceInterpreter::interpret_health(&layer, &widget(1)).expect_err("sandboxed");
        assert!(error.to_string().contains(name), "{body}: {error}");
    }
    // os.time and os.date stay, as in Karmada's sandbox.
    let interpreter = layer_with(
        json!({"healthInterpretation": script("function InterpretHealth(obj)\n  return os.time() > 0 and os.date('%Y') ~= nil\nend")}),
    );
    assert_eq!(
        interpreter.interpret_health(&widget(1)),
        ResourceHealth::Healthy
    );
}

#[test]
fn check_reports_syntax_lines_missing_entry_points_and_unavailable_names() {
    let vm = LuaVm::default();
    let bad = customization(
        "w",
        "u",
        1,
        json!({
            "replicaResource": script("function GetReplicas(obj)\n  local x = \n  return 1\nend"),
            "replicaRevision": script("function Revise(obj, n)\n  return obj\nend"),
            "retention": script("function Retain(d, o)\n  os.execute('rm -rf /')\n  return d\nend"),
        }),
    );
    let errors = check_customization(&vm, &bad);
    let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 3, "{text:?}");
    assert_eq!(errors[0].path, "spec.customizations.retention.luaScript");
    assert_eq!(errors[0].line, Some(2));
    assert_eq!(
        errors[1].path,
        "spec.customizations.replicaResource.luaScript"
    );
    assert_eq!(errors[1].line, Some(3), "{text:?}");
    assert!(errors[2].message.contains("ReviseReplica"), "{text:?}");
    let good = customization(
        "w",
        "u",
        1,
        json!({"replicaResource": script("-- os.execute is mentioned only here\nfunction GetReplicas(obj)\n  return 1, nil\nend")}),
    );
    assert_eq!(check_customization(&vm, &good), Vec::new());
    let empty = customization("w", "u", 1, json!({}));
    assert_eq!(
        check_customization(&vm, &empty)[0].path,
        "spec.customizations"
    );
}

#[test]
fn scripts_are_kept_per_generation_and_replaced_on_change() {
    let layer = ConfigurableInterpreter::default();
    let v1 = customization(
        "widget",
        "u1",
        1,
        json!({"replicaResource": script("function GetReplicas(obj)\n  return 1\nend")}),
    );
    layer.load(std::slice::from_ref(&v1));
    let first = layer
        .script(
            &Target::new("example.io/v1", "Widget"),
            Operation::InterpretReplica,
        )
        .expect("script");
    layer.load(std::slice::from_ref(&v1));
    let again = layer
        .script(
            &Target::new("example.io/v1", "Widget"),
            Operation::InterpretReplica,
        )
        .expect("script");
    assert_eq!(
        first.id, again.id,
        "same uid and generation keep the compiled script"
    );
    let v2 = customization(
        "widget",
        "u1",
        2,
        json!({"replicaResource": script("function GetReplicas(obj)\n  return 2\nend")}),
    );
    layer.load(&[v2]);
    assert_eq!(
        ResourceInterpreter::get_replicas(&layer, &widget(9)).map(|r| r.replicas),
        Ok(2)
    );
    layer.load(&[]);
    assert!(layer.is_empty());
    assert!(matches!(
        ResourceInterpreter::get_replicas(&layer, &widget(9)),
        Err(InterpretError::Unsupported { .. })
    ));
}

#[test]
fn the_first_customization_by_name_wins_per_operation() {
    let layer = ConfigurableInterpreter::default();
    layer.load(&[
        customization("b", "u2", 1, json!({"replicaResource": script("function GetReplicas(obj)\n  return 2\nend"),
                                          "healthInterpretation": script("function InterpretHealth(obj)\n  return false\nend")})),
        customization("a", "u1", 1, json!({"replicaResource": script("function GetReplicas(obj)\n  return 1\nend")})),
    ]);
    assert_eq!(
        ResourceInterpreter::get_replicas(&layer, &widget(9)).map(|r| r.replicas),
        Ok(1)
    );
    assert_eq!(
        ResourceInterpreter::interpret_health(&layer, &widget(9)),
        Ok(false)
    );
}

#[test]
fn wrong_result_shapes_are_errors_that_name_the_entry_point() {
    let interpreter = layer_with(json!({
        "replicaResource": script("function GetReplicas(obj)\n  return 'three'\nend"),
        "replicaRevision": script("function ReviseReplica(obj, n)\n  return 5\nend"),
    }));
    let error = interpreter
        .get_replicas(&widget(1))
        .expect_err("shape")
        .to_string();
    assert!(
        error.contains("GetReplicas") && error.contains("number"),
        "{error}"
    );
    let error = interpreter
        .revise_replica(&widget(1), 2)
        .expect_err("shape")
        .to_string();
    assert!(
        error.contains("ReviseReplica") && error.contains("table"),
        "{error}"
    );
}

#[test]
fn kube_quantity_helpers() {
    let interpreter = layer_with(json!({
        "statusReflection": script("local kube = require('kube')\nfunction ReflectStatus(obj)\n  return {sum = kube.resourceAdd('100m', '1', nil, '1.5'), mem = kube.getResourceQuantity('1Ki')}\nend"),
    }));
    assert_eq!(
        interpreter.reflect_status(&widget(1)).expect("reflect"),
        Some(json!({"mem": 1024, "sum": "2600m"}))
    );
}

/// The objects a call gets are lent to it, not copied: a script that keeps one for its next call (Karmada
/// runs every call in a fresh VM, where nothing is kept) gets an error saying so, never another call's data.
#[test]
fn objects_kept_by_a_script_for_its_next_call_are_refused() {
    let interpreter = layer_with(json!({
        "statusAggregation": script("function AggregateStatus(desired, items)\n  if kept ~= nil then\n    desired.status = {earlier = kept.spec.replicas}\n    return desired\n  end\n  kept = desired\n  desired.status = {clusters = #items}\n  return desired\nend"),
    }));
    let first = interpreter
        .aggregate_status(&widget(6), &[])
        .expect("first call");
    assert_eq!(first["status"], json!({"clusters": 0}));
    assert_eq!(first["spec"]["replicas"], 6);
    let err = interpreter
        .aggregate_status(&widget(7), &[])
        .expect_err("a kept object")
        .to_string();
    assert!(err.contains("after that call ended"), "{err}");
}
