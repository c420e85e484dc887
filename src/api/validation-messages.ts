/**
 * apimachinery's validation messages (k8s.io/apimachinery/pkg/util/validation), worded as Go words them, for the
 * checks tskubelet makes as upstream does: label keys and values, DNS labels and subdomains. Pure.
 */

/** RegexError: the message, its examples and the pattern (`… (e.g. 'a',  or 'b', regex used for validation is '…')`). */
export function regexError(message: string, format: string, ...examples: string[]): string {
  return `${message} (e.g. ${examples.map((example) => `'${example}', `).join(' or ')}regex used for validation is '${format}')`;
}
