// Package spi is the service-provider interface between the public state
// package (the typed state handles users create) and the keyed state
// backends under internal/statebackend. It is internal so that the public
// API names no backend type: users only ever hold a state.KeyedStore and
// pass it on.
//
// A backend hands the handle constructors of package state a Backend per
// state; what kind of table it keeps the state in, it says by the
// capability interfaces that Backend implements, which the constructors
// check once, when the state is created, never per access. Serialized is
// the capability of a backend that keeps each state as bytes (Pebble): any
// backend that implements it gets every state kind without a change to
// package state. The heap backend's typed tables are the other capability:
// their Backend is the *heap.Store itself, because a table typed by the
// user's value type can only be instantiated where that type is known, in
// the generic constructors of package state (Go instantiates generic code
// at compile time), so those constructors name the heap package.
//
// This package imports no backend.
package spi
