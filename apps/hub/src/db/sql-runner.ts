/** The little raw SQL the hub needs outside Prisma: migrations, the advisory lock, readiness. */
export interface SqlRunner {
  /** Runs one or more statements with no parameters. */
  exec(sql: string): Promise<void>;
  query<T>(sql: string, params?: unknown[]): Promise<T[]>;
}
