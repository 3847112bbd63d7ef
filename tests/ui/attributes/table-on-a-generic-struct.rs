// `#[derive(Table)]` on a generic struct: a table's model is one static value.
use entity_manager::Table;

#[derive(Table)]
#[table(hash_key = "pk")]
struct Users<T> {
    marker: std::marker::PhantomData<T>,
}

fn main() {}
