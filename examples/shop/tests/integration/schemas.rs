//! Every schema the shop publishes follows the portable profile clients accept.

use carmy::schema::check_portable;

#[test]
fn every_published_schema_is_portable() {
    let runtime = shop::runtime().unwrap();
    assert_eq!(runtime.catalog().len(), 9);
    for entry in runtime.catalog() {
        for (which, schema) in [
            ("input", entry.input_schema()),
            ("output", entry.output_schema()),
        ] {
            check_portable(schema)
                .unwrap_or_else(|problems| panic!("{} {which} schema: {problems}", entry.name()));
        }
        assert_eq!(entry.input_schema()["type"], "object", "{}", entry.name());
    }
}

#[test]
fn optional_fields_are_simply_not_required() {
    let runtime = shop::runtime().unwrap();
    let search = runtime.catalog().get("search_products").unwrap();
    let schema = search.input_schema();
    assert_eq!(schema["required"], serde_json::json!(["query"]));
    assert_eq!(schema["properties"]["limit"]["type"], "integer");
    assert_eq!(schema["properties"]["category"]["type"], "string");
    assert_eq!(schema["properties"]["category"]["enum"][0], "peripherals");
    let order = runtime.catalog().get("place_order").unwrap();
    // Nested types are inlined, not referenced.
    assert_eq!(
        order.input_schema()["properties"]["ship_to"]["type"],
        "object"
    );
    assert_eq!(
        order.input_schema()["properties"]["lines"]["items"]["required"],
        serde_json::json!(["product_id", "quantity"])
    );
}
