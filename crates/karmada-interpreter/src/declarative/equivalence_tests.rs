//! For Deployments, the native interpreter and a Lua customization written to mean the same agree on every
//! operation they both implement, for generated objects: the Lua layer (conversions, the `kube` helpers, the
//! result decoding) adds nothing and loses nothing.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::{Interpreter, ResourceInterpreter};

const DEPLOYMENT_IN_LUA: &str = r#"
spec:
  target: {apiVersion: apps/v1, kind: Deployment}
  customizations:
    replicaResource:
      luaScript: |
        local kube = require("kube")
        function GetReplicas(obj)
          local needs = kube.accuratePodRequirements(obj.spec.template)
          if needs ~= nil then
            needs.namespace = obj.metadata.namespace
          end
          return obj.spec.replicas or 1, needs
        end
    replicaRevision:
      luaScript: |
        function ReviseReplica(obj, desired)
          obj.spec.replicas = desired
          return obj
        end
    healthInterpretation:
      luaScript: |
        function InterpretHealth(obj)
          local s = obj.status or {}
          local updated = s.updatedReplicas or 0
          return (s.observedGeneration or 0) >= (obj.metadata.generation or 0)
            and updated >= (obj.spec.replicas or 1)
            and (s.availableReplicas or 0) >= updated
        end
    dependencyInterpretation:
      luaScript: |
        local kube = require("kube")
        function GetDependencies(obj)
          return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)
        end
"#;

fn lua_layer() -> ConfigurableInterpreter {
    let mut customization: ResourceInterpreterCustomization =
        serde_saphyr::from_str(DEPLOYMENT_IN_LUA).expect("customization");
    customization.metadata.name = Some("deployment".into());
    let layer = ConfigurableInterpreter::default();
    layer.load(&[customization]);
    layer
}

prop_compose! {
    fn deployment()(
        replicas in proptest::option::of(0i64..40),
        // A stored Deployment always has its namespace (kube.getPodDependencies reads none as "default").
        namespace in prop_oneof![Just("default"), Just("shop")],
        cpu in proptest::option::of(prop_oneof![Just("100m"), Just("1"), Just("1500m")]),
        memory in proptest::option::of(prop_oneof![Just("64Mi"), Just("1Gi")]),
        zone in proptest::option::of(prop_oneof![Just("a"), Just("b")]),
        secrets in proptest::collection::vec("[a-z]{1,6}", 0..3),
        config in proptest::option::of("[a-z]{1,6}"),
        account in prop_oneof![Just(""), Just("default"), Just("runner")],
        generation in 1i64..5,
        status in proptest::option::of((0i64..5, 0i64..40, 0i64..40)),
    ) -> Value {
        let mut requests = serde_json::Map::new();
        if let Some(cpu) = cpu { requests.insert("cpu".into(), json!(cpu)); }
        if let Some(memory) = memory { requests.insert("memory".into(), json!(memory)); }
        let env: Vec<Value> = secrets.iter().map(|s| json!({"name": s, "valueFrom": {"secretKeyRef": {"name": s, "key": "k"}}})).collect();
        let mut pod = json!({"containers": [{"name": "app", "image": "app:1", "resources": {"requests": requests}, "env": env}]});
        if let Some(zone) = zone { pod["nodeSelector"] = json!({"zone": zone}); }
        if let Some(config) = config { pod["volumes"] = json!([{"name": "c", "configMap": {"name": config}}]); }
        if !account.is_empty() { pod["serviceAccountName"] = json!(account); }
        let mut object = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "generation": generation},
            "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}}});
        object["metadata"]["namespace"] = json!(namespace);
        if let Some(replicas) = replicas { object["spec"]["replicas"] = json!(replicas); }
        if let Some((observed, updated, available)) = status {
            object["status"] = json!({"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available});
        }
        object
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn lua_and_native_agree_on_deployments(object in deployment(), revised in 0i64..50) {
        let native = Interpreter::native();
        let lua = lua_layer();
        prop_assert_eq!(lua.get_replicas(&object), native.get_replicas(&object));
        prop_assert_eq!(lua.revise_replica(&object, revised), native.revise_replica(&object, revised));
        prop_assert_eq!(
            lua.interpret_health(&object).ok(),
            Some(native.interpret_health(&object) == karmada_api::work::ResourceHealth::Healthy)
        );
        let mut from_lua = lua.get_dependencies(&object).expect("lua dependencies");
        from_lua.sort();
        from_lua.dedup();
        prop_assert_eq!(Ok(from_lua), native.get_dependencies(&object));
    }
}
