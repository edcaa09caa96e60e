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
// package state. Typed tables are the other capability: the Backend is a
// *typedstore.Store, the data structure of typed in-memory keyed tables
// (internal/statebackend/typedstore), which a backend offers by keeping
// its states in one (the hashmap backend keeps all of them there). A
// table typed by the user's value type can only be instantiated where that
// type is known, in the generic constructors of package state (Go
// instantiates generic code at compile time), so the typed store is part
// of the SPI, not of a backend: package state and the operators name it
// and this package, never a backend. Operators reach the tables directly
// through DirectTable and DirectStore (direct.go).
//
// This package imports no backend; it imports the typed store.
package spi
