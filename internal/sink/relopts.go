package sink

// Options a sink relation stores next to its WITH options (in its catalog
// entry): the frontend writes them at CREATE SINK and prints them back in
// SHOW CREATE SINK; the meta node reads them to configure the connector.
const (
	OptFormat = "_format"
	OptEncode = "_encode"
	OptFrom   = "_from" // CREATE SINK ... FROM this relation
	// OptInto is the object id of the table of CREATE SINK ... INTO, and
	// OptIntoName its qualified name as written at CREATE.
	OptInto     = "_into"
	OptIntoName = "_into_name"
	// OptEncodePrefix prefixes each ENCODE (...) option.
	OptEncodePrefix = "_encode."
)
