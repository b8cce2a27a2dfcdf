/** The parse tree of a Go text/template, reduced to what Flotilla executes. */

export type ListNode = Node[];

export type Node =
  | { type: 'text'; text: string }
  | { type: 'action'; pipe: Pipe; pos: number }
  | { type: 'if' | 'with'; pipe: Pipe; list: ListNode; elseList?: ListNode; pos: number }
  | { type: 'range'; pipe: Pipe; list: ListNode; elseList?: ListNode; pos: number }
  | { type: 'break' | 'continue'; pos: number };

export interface Pipe {
  /** Declared or assigned variables, `$` included (`$x := …`, `$i, $e := …`, `$x = …`). */
  decl: string[];
  isAssign: boolean;
  cmds: Command[];
  pos: number;
}

export interface Command {
  args: Arg[];
  pos: number;
  /** The command's source, for error messages (`at <index .x 1>`). */
  src: string;
}

export type Arg =
  | { type: 'dot' }
  | { type: 'nil' }
  | { type: 'bool'; value: boolean }
  | { type: 'string'; value: string }
  /** A number constant; `int` when Go would make it an int (no `.`, `e` or `p` in a decimal). */
  | { type: 'number'; text: string; int?: bigint; float: number; isChar?: boolean }
  /** `pos` is where Go reports errors for it: the field, or the first chained field of `.a.b`. */
  | { type: 'field'; path: string[]; pos: number }
  | { type: 'variable'; name: string; path: string[]; pos: number }
  | { type: 'identifier'; name: string }
  | { type: 'pipe'; pipe: Pipe }
  | { type: 'chain'; node: Arg; path: string[]; pos: number };
