// The package ships no types; this is the part of its API the diff uses.
declare module '@michaelhomer/jqjs' {
  type Filter = (input: unknown) => Iterable<unknown>;
  interface Jq {
    compile(program: string): Filter;
  }
  const jq: Jq;
  export default jq;
}
