//! Looking into a type's tokens, the only reading of types the macro does: what it is called
//! (its last path segment), and whether it holds an `impl Trait` or a borrow anywhere.

use quote::ToTokens;
use syn::{GenericArgument, Lifetime, PathArguments, PathSegment, Type};

/// The last segment of a plain path type (`carmy::Context` → `Context`).
pub(crate) fn last_segment(ty: &Type) -> Option<&PathSegment> {
    match ungroup(ty) {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        _ => None,
    }
}

/// Types from `macro_rules!` arrive wrapped in invisible groups; parentheses are just noise.
pub(crate) fn ungroup(mut ty: &Type) -> &Type {
    loop {
        match ty {
            Type::Group(group) => ty = &group.elem,
            Type::Paren(paren) => ty = &paren.elem,
            _ => return ty,
        }
    }
}

/// The first `impl Trait` anywhere in `ty`.
pub(crate) fn find_impl_trait(ty: &Type) -> Option<&Type> {
    first(ty, &|part| match part {
        Part::Type(impl_trait @ Type::ImplTrait(_)) => Some(impl_trait),
        _ => None,
    })
}

/// The first borrow in `ty`: a lifetime other than `'static` (`Cow<'_, str>`) or a reference
/// without one (`Vec<&str>`). Tools take owned values only, so the generated code may rely on
/// the context being the only borrowed parameter.
pub(crate) fn find_borrow(ty: &Type) -> Option<&dyn ToTokens> {
    let is_static = |lifetime: &Lifetime| lifetime.ident == "static";
    first(ty, &|part| match part {
        Part::Type(Type::Reference(reference))
            if !reference.lifetime.as_ref().is_some_and(is_static) =>
        {
            Some(reference as &dyn ToTokens)
        }
        Part::Lifetime(lifetime) if !is_static(lifetime) => Some(lifetime as &dyn ToTokens),
        _ => None,
    })
}

/// What [`first`] shows the search: each type, and each lifetime argument.
enum Part<'a> {
    Type(&'a Type),
    Lifetime(&'a Lifetime),
}

/// The first answer of `found` in `ty`, outermost first: the type itself, then what it is made
/// of (behind references, pointers, slices, arrays, tuples, groups, and in generic arguments).
fn first<'a, T>(ty: &'a Type, found: &impl Fn(Part<'a>) -> Option<T>) -> Option<T> {
    if let Some(hit) = found(Part::Type(ty)) {
        return Some(hit);
    }
    let inner = match ty {
        Type::Group(inner) => &inner.elem,
        Type::Paren(inner) => &inner.elem,
        Type::Reference(inner) => &inner.elem,
        Type::Ptr(inner) => &inner.elem,
        Type::Slice(inner) => &inner.elem,
        Type::Array(inner) => &inner.elem,
        Type::Tuple(tuple) => return tuple.elems.iter().find_map(|elem| first(elem, found)),
        Type::Path(path) => {
            return path
                .path
                .segments
                .iter()
                .filter_map(|segment| match &segment.arguments {
                    PathArguments::AngleBracketed(args) => Some(args),
                    _ => None,
                })
                .flat_map(|args| &args.args)
                .find_map(|arg| match arg {
                    GenericArgument::Type(ty) => first(ty, found),
                    GenericArgument::Lifetime(lifetime) => found(Part::Lifetime(lifetime)),
                    _ => None,
                });
        }
        _ => return None,
    };
    first(inner, found)
}
