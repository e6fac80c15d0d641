//! Generates the estimator's gRPC code from `proto/` (needs `protoc`, from Debian's protobuf-compiler, which
//! scripts/setup.sh installs).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/pkg/estimator/pb/estimator.proto",
        "proto/pkg/estimator/service/service.proto",
        "proto/k8s/core.proto",
        "proto/k8s/quantity.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    tonic_prost_build::configure()
        .include_file("protos.rs")
        .compile_protos(&protos, &["proto"])
        .map_err(|e| {
            format!("compiling the estimator's protos (is protoc installed? scripts/setup.sh installs protobuf-compiler): {e}")
        })?;
    Ok(())
}
