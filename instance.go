package weir

import "reflect"

// instanceOf returns the copy of a user function that one subtask runs.
// Flink gives every parallel instance its own deserialized copy of a
// function; Weir copies a function held by pointer to a struct (a shallow
// copy of its fields, once per subtask), so fields set in Open, such as
// state handles, belong to one subtask. Other values, including plain Go
// funcs and the variables they capture, are shared by all subtasks.
func instanceOf[F any](fn F) F {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fn
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(F)
}
