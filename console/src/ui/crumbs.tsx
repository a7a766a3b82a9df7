/** Where the page is: team › project › environment, by name, each a link (the last is the page itself). */
export function Crumbs({ items }: { items: { href: string; name: string | undefined }[] }) {
  return (
    <nav aria-label="Breadcrumb">
      <ol class="crumbs">
        {items.map((c, i) => (
          <li key={c.href}>
            <a href={c.href} aria-current={i === items.length - 1 ? 'page' : undefined}>
              {c.name ?? '…'}
            </a>
          </li>
        ))}
      </ol>
    </nav>
  );
}
