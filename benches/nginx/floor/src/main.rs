//! `front-page-floor FILE ADDRESS`: serves FILE's bytes at `/` as `text/html`, as fast as axum
//! on Tokio can: what any handler built on them could reach at best on this machine.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, address] = args.as_slice() else { panic!("usage: front-page-floor FILE ADDRESS") };
    let page = axum::body::Bytes::from(std::fs::read(file).expect("the page"));
    let app = axum::Router::new().route(
        "/",
        axum::routing::get(move || {
            let page = page.clone();
            async move { ([(axum::http::header::CONTENT_TYPE, "text/html; charset=utf-8")], page) }
        }),
    );
    let listener = tokio::net::TcpListener::bind(address.as_str()).await.expect("the address");
    axum::serve(listener, app).await.expect("serving");
}
