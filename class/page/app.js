// Draws /api/progress as a table and redraws it every two seconds. Every
// string from a report goes in as text, never as markup.
"use strict";

function cell(tag, text, cls, title) {
  const c = document.createElement(tag);
  c.textContent = text;
  if (cls) c.className = cls;
  if (title) c.title = title;
  return c;
}

function firstFailure(p, s) {
  for (const item of p.items) {
    const c = s.cells[item];
    if (c && c.status === "failing") return item + ": " + (c.detail || "failing");
  }
  return "";
}

function draw(p) {
  const head = document.querySelector("#progress thead");
  const body = document.querySelector("#progress tbody");
  const hr = document.createElement("tr");
  hr.appendChild(cell("th", "student", "name"));
  hr.appendChild(cell("th", "done"));
  for (const item of p.items) hr.appendChild(cell("th", item));
  hr.appendChild(cell("th", "first failure", "first"));
  head.replaceChildren(hr);
  const rows = p.students.map(s => {
    const tr = document.createElement("tr");
    tr.dataset.student = s.name;
    tr.appendChild(cell("td", s.name, "name"));
    tr.appendChild(cell("td", s.done + "/" + p.items.length));
    for (const item of p.items) {
      const c = s.cells[item];
      if (!c) { tr.appendChild(cell("td", "")); continue; }
      const done = c.status === "done";
      tr.appendChild(cell("td", done ? "✓" : "✗", c.status, c.detail));
    }
    tr.appendChild(cell("td", firstFailure(p, s), "first"));
    return tr;
  });
  body.replaceChildren(...rows);
  document.getElementById("status").textContent =
    p.students.length + " students · updated " + new Date().toLocaleTimeString();
}

async function poll() {
  try {
    const r = await fetch("/api/progress", {cache: "no-store"});
    draw(await r.json());
  } catch (e) {
    document.getElementById("status").textContent = "the class server does not answer: " + e;
  }
  setTimeout(poll, 2000);
}
poll();
