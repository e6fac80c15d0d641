//! What `karmadactl plan -f FILE...` prints, without the CLI: plans every template the given files' policies
//! claim and prints the table. `cargo run -p karmada-scheduler --example plan -- FILE... [-o wide|json]`.

use karmada_scheduler::{default_registry, plan_documents};
use serde_json::Value;

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let output = match args.iter().position(|a| a == "-o") {
        Some(index) if index + 1 < args.len() => {
            let value = args.remove(index + 1);
            args.remove(index);
            value
        }
        _ => "table".to_string(),
    };
    let mut documents = Vec::new();
    for path in &args {
        let text = std::fs::read_to_string(path)?;
        let parsed: Vec<Value> = serde_saphyr::from_multiple(&text)?;
        documents.extend(parsed.into_iter().filter(|d| !d.is_null()));
    }
    let plans = plan_documents(&documents, None, &default_registry()?)?;
    let mut all_scheduled = true;
    for plan in &plans {
        all_scheduled &= plan.success();
        match output.as_str() {
            "wide" => println!("{}", plan.render_wide()),
            "json" => println!("{}", serde_json::to_string_pretty(&plan.binding)?),
            _ => println!("{}", plan.render_table()),
        }
    }
    if !all_scheduled {
        std::process::exit(1);
    }
    Ok(())
}
