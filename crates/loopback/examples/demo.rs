fn main() {
    match rnic_loopback::demo::run_demo(1) {
        Ok(s) => print!("{s}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
