//! placeholder
use proc_macro::TokenStream;
/// `#[gpu_cilk]`
#[proc_macro_attribute]
pub fn gpu_cilk(_a: TokenStream, item: TokenStream) -> TokenStream { item }
/// `#[gpu_cilk::device]`
#[proc_macro_attribute]
pub fn device(_a: TokenStream, item: TokenStream) -> TokenStream { item }
