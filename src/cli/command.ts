/** A subcommand: gets the arguments after its name, resolves to the exit status. */
export type Command = (argv: string[]) => Promise<number>;
