//! The `ibsm` command.

fn main() {
    println!("ibsm: subcommands arrive with the SM core");
}
