// Package statespi is the interface between the public state package (the
// typed state handles users create) and the keyed state backends
// (internal/statebackend). It is internal so that the public API names no
// backend type: users only ever hold a state.KeyedStore and pass it on.
package statespi
